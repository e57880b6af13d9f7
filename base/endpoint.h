// Endpoint (an IP address and port, as the sockaddr the socket calls take) and Cidr (an
// address block, for `allow`), with their parsing and formatting. The listeners, the upstream
// and anything else that only needs an address include this rather than resolver/config.h.
// Addresses are numeric only: configuring a DNS server never does DNS lookups.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/checked.h"

namespace hg::base {

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

}  // namespace hg::base
