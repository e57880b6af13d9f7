// Config: every setting of the daemon, with its default, built from command-line flags
// (CLI11) and an optional TOML file with the same keys (toml++); the command line wins.
//
// Also the forwarding-loop check. The value types configuration needs have their own files:
// Endpoint and Cidr in resolver/net/endpoint.h, the resolv.conf reader behind `upstream-file` in
// resolver/upstream/resolv_conf.h, forward zones, local records and hosts files in
// resolver/routing_settings.h, RedisConfig in resolver/fleet/redis_config.h, Checked in
// resolver/checked.h. None of them is above query/, which reads this record
// (cmake/HgLayers.cmake). All of this runs at start-up (and
// on SIGHUP for the resolv.conf), so it may allocate freely; errors are returned as one
// human-readable line that names the flag or key, the value given, and what is allowed
// (docs/architecture.md §7), never thrown.
//
// Zone names (ttl-cap) stay strings here: only syntax is checked, and the daemon turns them
// into wire::Name. A caller can plug a stricter check in via ParseOptions::validate_zone.
#pragma once

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

#include "base/cli_doc.h"
#include "resolver/checked.h"
#include "resolver/fleet/redis_config.h"
#include "resolver/net/endpoint.h"
#include "resolver/routing_settings.h"
#include "resolver/upstream/resolv_conf.h"

namespace hg::resolver {

/// One `ttl-cap ZONE=SECONDS`: records at or below `zone` are cached with TTL <= `cap`.
struct TtlCap {
  std::string zone{};  ///< as given, syntax-checked; e.g. "shop.example.com" or "shop.example.com."
  std::chrono::seconds cap{0};
  friend bool operator==(const TtlCap&, const TtlCap&) = default;
};

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
  /// shadow-ttl ZONE=SECONDS (cache/shadow.h); re-read from config_file on SIGHUP unless
  /// given on the command line (shadow_ttls_from_cli).
  std::vector<TtlCap> shadow_ttls{};
  bool shadow_ttls_from_cli = false;
  uint64_t shadow_size = uint64_t{8} << 20;  ///< bytes of the shadow table
  unsigned threads = 1;
  bool log_queries = false;
  /// --log-queries=json: the query log as JSON lines (resolver/query/query_engine.cc).
  bool log_queries_json = false;
  /// 0x20: random letter case in upstream query names, checked in the answers.
  bool use_0x20 = true;
  /// ANY is answered here with RFC 8482's HINFO; false (--pass-any) forwards it as it is.
  bool minimal_any = true;
  /// Rebinding protection (docs/security.md): A/AAAA records in these blocks are left out of
  /// upstream answers, except for names at or below `private_domains` and forward zones.
  std::vector<Cidr> private_addresses{};
  std::vector<std::string> private_domains{};
  bool check_config = false;   ///< validate, print a summary, exit 0
  std::string control_path{};  ///< unix control socket; empty: none
  /// --user (resolver/ops/privileges.h): the user to switch to after binding, looked up when
  /// the configuration was read; empty: stay as started. --allow-root: started as root
  /// without --user, run as root anyway.
  std::string user{};
  uint32_t user_uid = 0, user_gid = 0;
  bool allow_root = false;
  std::optional<Endpoint> metrics{};
  /// Connection admission (resolver/net/conn_admission.h): TCP connections one source (an IPv4
  /// address, an IPv6 /64) may hold per listener; who may reach --metrics (empty: `allow`).
  unsigned tcp_max_per_source = 64;
  /// Fair shares (resolver/query/inflight.h, docs/security.md): in-flight entries one client
  /// source may have created (0: no limit), in-flight entries of a zone whose upstream queries
  /// keep timing out (0: no cap), and queries per second from one source (0: no limit).
  unsigned client_share = 512;
  unsigned failing_zone_cap = 32;
  unsigned client_rate = 0;
  std::vector<Cidr> metrics_allow{};
  RedisConfig redis{};
  std::string cache_file{};  ///< warm-restart cache file; empty: none
  /// Also save cache_file this often while running (resolver/ops/warm_restart.h); 0: only at
  /// stop and on `hourglass-ctl save`.
  std::chrono::milliseconds cache_save_interval{std::chrono::minutes{5}};
  std::string config_file{};      ///< the --config given, empty if none
  std::string dnstap{};           ///< --dnstap: PATH or unix:PATH; empty: no dnstap
  std::string dnstap_identity{};  ///< --dnstap-identity; empty: the host name
  /// Given on the command line, so SIGHUP keeps them rather than re-reading the file's.
  bool dnstap_from_cli = false, dnstap_identity_from_cli = false;
  /// --forward ZONE=ADDR,... and --hosts-file PATH (resolver/routing_settings.h); re-read from
  /// config_file on SIGHUP unless given on the command line.
  std::vector<ForwardZone> forward_zones{};
  std::vector<std::string> hosts_files{};
  /// --local-record 'NAME TTL TYPE DATA', as given (checked by parse_local_record).
  std::vector<std::string> local_records{};
  bool forward_from_cli = false, hosts_files_from_cli = false;
  /// --no-special-zone ZONE: built-in special-use zones passed to the upstreams instead
  /// (lowercase, no final dot; each one is_special_zone).
  std::vector<std::string> no_special_zones{};
  /// --single-label forward: single-label names asked for an address go to the default
  /// upstreams instead of being answered NODATA here (docs/local-names.md).
  bool single_label_forward = false;
  /// DNS over TLS (resolver/upstream/dot.h, docs/dot.md): the tls:// upstreams (their addresses are
  /// in `upstreams` too), --tls-ca-file and the --tls-pin SPKI pins as given.
  std::vector<TlsTarget> tls_upstreams{};
  std::string tls_ca_file{};
  std::vector<std::string> tls_pins{};
  /// --trust-ad: tls:// upstreams (of --upstream or --forward) whose AD bit is passed on;
  /// each must carry #AUTH-NAME. Every other upstream's AD is cleared.
  std::vector<Endpoint> trust_ad{};
  /// --dnssec: whether upstream answers are validated (resolver/query/engine_dnssec.cc,
  /// docs/dnssec.md). Validate: when the upstreams deliver DNSSEC records (probed), else
  /// insecure with a warning; Require: the same, but fail closed.
  enum class Dnssec : uint8_t { Off, Validate, Require };
  Dnssec dnssec = Dnssec::Validate;
  /// Whether --dnssec was given: without it, a missing trust anchor file or --trust-ad turns
  /// validation off with a warning instead of stopping the start.
  bool dnssec_given = false;
  /// --insecure-domain: negative trust anchors (RFC 7646), as given.
  std::vector<std::string> insecure_domains{};
  /// --trust-anchor: the DS or DNSKEY records validation starts from (dnssec/trust_anchor.h).
  std::string trust_anchor_file = "/usr/share/dns/root.key";
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
/// SIGHUP: the forward zones and hosts files the config file holds now (values from the
/// command line are kept); an error line if the file no longer reads.
Checked<std::pair<std::vector<ForwardZone>, std::vector<std::string>>> reread_routing_settings(
    const Config& running);
/// The shadow-ttl values of a TOML config file (for SIGHUP), checked like parse_config()
/// checks them; an empty list when the file has no shadow-ttl key.
Checked<std::vector<TtlCap>> read_shadow_ttls(const std::string& config_file,
                                              const ParseOptions& options = {});

/// The text --help prints.
std::string config_help();
/// The command line and the config-file keys as JSON (base/cli_doc.h), from the same
/// table as --help, for the generated man pages and completion; `extra` gives the prose.
std::string config_doc_json(clidoc::Extra extra);

/// The effective configuration as a TOML file that parse_config() reads back to the same
/// Config (for --check-config and bug reports). Upstreams read from upstream-file appear as
/// a comment, so the file stays the source of truth for them.
std::string to_toml(const Config& config);

/// Byte count with an optional suffix: K/KiB (1024), M/MiB, G/GiB; e.g. "64MiB", "65536".
std::optional<uint64_t> parse_bytes(std::string_view text);
/// Whole seconds with an optional unit: "30", "30s", "5m", "1h", "1d" (base/duration.h).
std::optional<std::chrono::seconds> parse_seconds(std::string_view text);
/// A TTL argument (of a control command): parse_seconds() within 0..max (max < 2^32); else
/// nullopt and the one-line error, with the value cut at 64 characters, in `why`.
std::optional<uint32_t> parse_ttl_arg(std::string_view text, int64_t max, std::string& why);
/// Milliseconds with an optional unit: "1800", "1800ms", "2s" (base/duration.h).
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
