// Config: every setting of the daemon, with its default, built from command-line flags
// (CLI11) and an optional TOML file with the same keys (toml++); the command line wins.
//
// Also the small value types configuration needs: Endpoint (an IP address and port),
// Cidr (an address block for `allow`), the resolv.conf reader behind `upstream-file`, and the
// forwarding-loop check. All of this runs at start-up (and on SIGHUP for the resolv.conf), so
// it may allocate freely; errors are returned as one human-readable line that names the
// flag or key, the value given, and what is allowed (STYLE C4), never thrown.
//
// Zone names (ttl-cap) stay strings here: only syntax is checked, and the daemon turns them
// into wire::Name. A caller can plug a stricter check in via ParseOptions::validate_zone.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace hg::resolver {

/// A value or a one-line error message; member names follow std::expected like wire::Result.
template <class T>
class [[nodiscard]] Checked {
 public:
  Checked(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  static Checked failure(std::string message) { return Checked(Tag{}, std::move(message)); }

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_); }

 private:
  struct Tag {};
  Checked(Tag, std::string message) : v_(std::in_place_index<1>, std::move(message)) {}
  std::variant<T, std::string> v_;
};

/// An IPv4 or IPv6 address with a port, stored as the sockaddr that bind(), sendto() and
/// c-ares take. A default-constructed Endpoint is 0.0.0.0:0.
class Endpoint {
 public:
  Endpoint();
  /// Copies a sockaddr_in or sockaddr_in6; nullopt for any other family or a short length.
  static std::optional<Endpoint> from_sockaddr(const sockaddr* sa, socklen_t len) noexcept;

  int family() const noexcept { return addr_.sa.sa_family; }
  uint16_t port() const noexcept;
  void set_port(uint16_t port) noexcept;
  const sockaddr* sockaddr_ptr() const noexcept { return &addr_.sa; }
  socklen_t sockaddr_len() const noexcept;
  const sockaddr_in& v4() const noexcept { return addr_.v4; }
  const sockaddr_in6& v6() const noexcept { return addr_.v6; }

  /// 0.0.0.0 or ::
  bool is_unspecified() const noexcept;
  /// 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104
  bool is_loopback() const noexcept;
  /// Same IP address, ignoring the port; an IPv4-mapped IPv6 address equals its IPv4 form.
  bool same_ip(const Endpoint& other) const noexcept;

  /// "192.0.2.1:53", "[2001:db8::1]:53", "[fe80::1%eth0]:53"
  std::string to_string() const;
  /// The address alone: "192.0.2.1", "2001:db8::1", "fe80::1%eth0"
  std::string ip_string() const;

  friend bool operator==(const Endpoint& a, const Endpoint& b) noexcept;

 private:
  union {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  } addr_;
};

/// Parses a numeric address with an optional port: "192.0.2.1", "192.0.2.1:5353",
/// "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:5353", "[fe80::1%eth0]:53". A bare IPv6
/// address takes no port (its colons would make one ambiguous): use brackets. Host names are
/// not accepted (no DNS lookups while configuring a DNS server). Without a port,
/// `default_port` is used, or the text is rejected when `default_port` is nullopt.
std::optional<Endpoint> parse_endpoint(std::string_view text, std::optional<uint16_t> default_port);

/// An address block, e.g. 127.0.0.0/8 or ::1/128.
class Cidr {
 public:
  /// "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32 or /128). Host bits beyond
  /// the prefix are an error, since "10.0.0.1/8" usually means a typo.
  static Checked<Cidr> parse(std::string_view text);

  /// Whether the address of `sa` (AF_INET or AF_INET6; port ignored) is in the block. An
  /// IPv4-mapped IPv6 address (a v4 client of a dual-stack socket) matches IPv4 blocks.
  bool contains(const sockaddr* sa) const noexcept;
  bool contains(const Endpoint& e) const noexcept { return contains(e.sockaddr_ptr()); }

  int family() const noexcept { return family_; }
  unsigned prefix() const noexcept { return prefix_; }
  std::string to_string() const;
  friend bool operator==(const Cidr&, const Cidr&) = default;

 private:
  int family_ = AF_INET;
  std::array<uint8_t, 16> bytes_{};  // network order; 4 used for IPv4
  unsigned prefix_ = 0;
};

/// One `ttl-cap ZONE=SECONDS`: records at or below `zone` are cached with TTL <= `cap`.
struct TtlCap {
  std::string zone{};  ///< as given, syntax-checked; e.g. "shop.example.com" or "shop.example.com."
  std::chrono::seconds cap{0};
  friend bool operator==(const TtlCap&, const TtlCap&) = default;
};

/// The parsed `nameserver` lines of a resolv.conf-style file.
struct ResolvConf {
  std::vector<Endpoint> nameservers;  ///< in file order, port 53 unless one was given
  std::vector<std::string> warnings;  ///< "line 3: ..." for nameserver lines we could not use
};

/// Reads `nameserver ADDR` lines (IPv4, IPv6, IPv6 with %scope). Lines starting with '#' or
/// ';' are comments, as is anything after the address; other keywords (search, options,
/// domain, sortlist) are ignored, since a forwarder has no use for them. As an extension
/// for tests and unusual setups, "ADDR:PORT" and "[V6]:PORT" are accepted too.
ResolvConf parse_resolv_conf(std::string_view text);
/// Reads and parses a file; the error names the path and the reason.
Checked<ResolvConf> read_resolv_conf(const std::string& path);

/// Every setting, with the defaults the daemon runs with when given no flags.
struct Config {
  std::vector<Endpoint> listen = default_listen();
  /// From --upstream, or else read from upstream_file (then upstreams_from_file is true,
  /// and SIGHUP re-reads the file).
  std::vector<Endpoint> upstreams{};
  bool upstreams_from_file = false;
  std::string upstream_file = "/etc/resolv.conf";
  uint64_t cache_size = uint64_t{64} << 20;  ///< bytes
  std::chrono::seconds cache_min_ttl{0};
  std::chrono::seconds cache_max_ttl{604800};
  std::chrono::seconds negative_max_ttl{3600};
  std::chrono::seconds stale_max{86400};             ///< serve-stale window after expiry (RFC 8767)
  std::chrono::seconds stale_ttl{30};                ///< TTL written into stale answers
  std::chrono::milliseconds client_timeout{1800};    ///< answer from stale after this
  std::chrono::milliseconds upstream_timeout{3000};  ///< SERVFAIL after this if nothing stale
  std::vector<Cidr> allow = default_allow();
  std::vector<TtlCap> ttl_caps{};
  unsigned threads = 1;
  bool log_queries = false;
  bool check_config = false;   ///< validate, print a summary, exit 0
  std::string control_path{};  ///< unix control socket; empty: none
  std::optional<Endpoint> metrics{};
  std::string config_file{};      ///< the --config given, empty if none
  std::string dnstap{};           ///< --dnstap: PATH or unix:PATH; empty: no dnstap
  std::string dnstap_identity{};  ///< --dnstap-identity; empty: the host name
  /// Given on the command line, so SIGHUP keeps them rather than re-reading the file's.
  bool dnstap_from_cli = false, dnstap_identity_from_cli = false;
  /// Non-fatal findings (e.g. an unusable nameserver line) for the daemon to log.
  std::vector<std::string> warnings{};

  static std::vector<Endpoint> default_listen();
  static std::vector<Cidr> default_allow();
};

/// How parse_config() ends when it does not produce a Config.
struct ConfigExit {
  int exit_code;        ///< 0 for --help/--version (print message to stdout), 2 for errors (stderr)
  std::string message;  ///< without trailing newline
};

struct ParseOptions {
  /// Extra check of a ttl-cap zone (e.g. wire::Name parsing); returns an explanation on
  /// failure. The built-in check covers label and name lengths and empty labels.
  std::function<std::optional<std::string>(std::string_view zone)> validate_zone;
  /// Addresses of this host's interfaces for the forwarding-loop check; nullopt asks the
  /// kernel (getifaddrs). Tests pass a fixed list.
  std::optional<std::vector<Endpoint>> local_addresses;
};

/// Parses the command line (argv[0] is the program name) and the --config file, reads the
/// upstream file if no --upstream was given, and checks for a forwarding loop.
/// Never exits and never throws: --help/--version give ConfigExit{0, text}; any bad flag,
/// key, value or file gives ConfigExit{2, one line naming it, the value, and what is allowed}.
std::variant<Config, ConfigExit> parse_config(int argc, const char* const* argv,
                                              const ParseOptions& options = {});

/// SIGHUP: the dnstap and dnstap-identity values the config file holds now (values from the
/// command line are kept), as {dnstap, dnstap_identity}; an error line if the file no
/// longer reads. Without a config file, the running values.
Checked<std::pair<std::string, std::string>> reread_dnstap_settings(const Config& running);

/// The text --help prints.
std::string config_help();

/// The effective configuration as a TOML file that parse_config() reads back to the same
/// Config (for --check-config and bug reports). Upstreams read from upstream-file appear as
/// a comment, so the file stays the source of truth for them.
std::string to_toml(const Config& config);

/// Byte count with an optional suffix: K/KiB (1024), M/MiB, G/GiB; e.g. "64MiB", "65536".
std::optional<uint64_t> parse_bytes(std::string_view text);
/// Seconds with an optional unit: "30", "30s", "5m", "1h", "1d".
std::optional<std::chrono::seconds> parse_seconds(std::string_view text);
/// Milliseconds with an optional unit: "1800", "1800ms", "2s".
std::optional<std::chrono::milliseconds> parse_millis(std::string_view text);

/// A forwarding loop: an upstream that is one of our own listening sockets.
struct ForwardingLoop {
  Endpoint upstream;
  Endpoint listen;
};

/// Finds the first upstream that would reach one of our listen sockets: same port and either
/// the same IP, or a wildcard listen (0.0.0.0 / ::) and an upstream that is a loopback or
/// local address. `local_addresses` are the host's interface addresses (ports ignored).
std::optional<ForwardingLoop> find_forwarding_loop(std::span<const Endpoint> listen,
                                                   std::span<const Endpoint> upstreams,
                                                   std::span<const Endpoint> local_addresses);
/// The host's interface addresses (getifaddrs), ports 0; empty if the kernel refuses.
std::vector<Endpoint> local_interface_addresses();
/// The one-line message for a loop: what loops, and to point --upstream-file at the real
/// servers. `upstream_source` is e.g. "--upstream" or the resolv.conf path.
std::string describe(const ForwardingLoop& loop, std::string_view upstream_source);

}  // namespace hg::resolver
