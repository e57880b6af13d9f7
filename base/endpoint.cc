#include "base/endpoint.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "base/text.h"

namespace hg::base {

using text::parse_digits;

namespace {

std::optional<in6_addr> parse_v6_with_scope(std::string_view text, uint32_t& scope) {
  scope = 0;
  std::string addr(text);
  auto pct = addr.find('%');
  if (pct != std::string::npos) {
    std::string zone = addr.substr(pct + 1);
    addr.resize(pct);
    if (zone.empty()) return std::nullopt;
    if (auto n = parse_digits(zone)) {
      if (*n > std::numeric_limits<uint32_t>::max()) return std::nullopt;
      scope = static_cast<uint32_t>(*n);
    } else {
      scope = if_nametoindex(zone.c_str());
      if (scope == 0) return std::nullopt;
    }
  }
  in6_addr a{};
  if (inet_pton(AF_INET6, addr.c_str(), &a) != 1) return std::nullopt;
  return a;
}

}  // namespace

// --- Endpoint --------------------------------------------------------------------------------

Endpoint::Endpoint() {
  std::memset(&addr_, 0, sizeof addr_);
  addr_.v4.sin_family = AF_INET;
}

std::optional<Endpoint> Endpoint::from_sockaddr(const sockaddr* sa, socklen_t len) noexcept {
  Endpoint e;
  if (sa == nullptr) return std::nullopt;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&e.addr_.v4, sa, sizeof(sockaddr_in));
    return e;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&e.addr_.v6, sa, sizeof(sockaddr_in6));
    return e;
  }
  return std::nullopt;
}

uint16_t Endpoint::port() const noexcept {
  return ntohs(family() == AF_INET6 ? addr_.v6.sin6_port : addr_.v4.sin_port);
}

void Endpoint::set_port(uint16_t port) noexcept {
  if (family() == AF_INET6) {
    addr_.v6.sin6_port = htons(port);
  } else {
    addr_.v4.sin_port = htons(port);
  }
}

socklen_t Endpoint::sockaddr_len() const noexcept {
  return family() == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

namespace {
// The IPv4 address of an AF_INET endpoint or of an IPv4-mapped AF_INET6 one.
std::optional<uint32_t> v4_of(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    return ntohl(in.sin_addr.s_addr);
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      uint32_t v;
      std::memcpy(&v, in6.sin6_addr.s6_addr + 12, 4);
      return ntohl(v);
    }
  }
  return std::nullopt;
}
}  // namespace

bool Endpoint::is_unspecified() const noexcept {
  if (family() == AF_INET) return addr_.v4.sin_addr.s_addr == htonl(INADDR_ANY);
  return IN6_IS_ADDR_UNSPECIFIED(&addr_.v6.sin6_addr);
}

bool Endpoint::is_loopback() const noexcept {
  if (auto v4 = v4_of(&addr_.sa)) return (*v4 >> 24) == 127;
  return IN6_IS_ADDR_LOOPBACK(&addr_.v6.sin6_addr);
}

bool Endpoint::same_ip(const Endpoint& other) const noexcept {
  auto a = v4_of(&addr_.sa);
  auto b = v4_of(&other.addr_.sa);
  if (a || b) return a == b;
  return std::memcmp(&addr_.v6.sin6_addr, &other.addr_.v6.sin6_addr, sizeof(in6_addr)) == 0 &&
         addr_.v6.sin6_scope_id == other.addr_.v6.sin6_scope_id;
}

std::string Endpoint::ip_string() const {
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &addr_.v4.sin_addr, buf, sizeof buf);
    return buf;
  }
  inet_ntop(AF_INET6, &addr_.v6.sin6_addr, buf, sizeof buf);
  std::string s = buf;
  if (addr_.v6.sin6_scope_id != 0) {
    char name[IF_NAMESIZE] = {};
    s += '%';
    s += if_indextoname(addr_.v6.sin6_scope_id, name) != nullptr
             ? std::string(name)
             : std::to_string(addr_.v6.sin6_scope_id);
  }
  return s;
}

std::string Endpoint::to_string() const {
  if (family() == AF_INET) return ip_string() + ":" + std::to_string(port());
  return "[" + ip_string() + "]:" + std::to_string(port());
}

bool operator==(const Endpoint& a, const Endpoint& b) noexcept {
  if (a.family() != b.family() || a.port() != b.port()) return false;
  if (a.family() == AF_INET) return a.addr_.v4.sin_addr.s_addr == b.addr_.v4.sin_addr.s_addr;
  return std::memcmp(&a.addr_.v6.sin6_addr, &b.addr_.v6.sin6_addr, sizeof(in6_addr)) == 0 &&
         a.addr_.v6.sin6_scope_id == b.addr_.v6.sin6_scope_id;
}

std::optional<Endpoint> parse_endpoint(std::string_view text,
                                       std::optional<uint16_t> default_port) {
  std::string_view host;
  std::optional<std::string_view> port_text;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
    }
    bracketed = true;
  } else {
    auto colons = std::count(text.begin(), text.end(), ':');
    if (colons == 1) {
      auto c = text.find(':');
      host = text.substr(0, c);
      port_text = text.substr(c + 1);
    } else {
      host = text;  // no port, or a bare IPv6 address
    }
  }
  uint16_t port = 0;
  if (port_text) {
    auto p = parse_digits(*port_text);
    if (!p || *p > 65535) return std::nullopt;
    port = static_cast<uint16_t>(*p);
  } else if (default_port) {
    port = *default_port;
  } else {
    return std::nullopt;
  }

  Endpoint e;
  std::string h(host);
  in_addr a4{};
  if (!bracketed && h.find(':') == std::string::npos) {
    if (inet_pton(AF_INET, h.c_str(), &a4) != 1) return std::nullopt;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = a4;
    sin.sin_port = htons(port);
    return Endpoint::from_sockaddr(reinterpret_cast<const sockaddr*>(&sin), sizeof sin);
  }
  uint32_t scope = 0;
  auto a6 = parse_v6_with_scope(host, scope);
  if (!a6) return std::nullopt;
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_addr = *a6;
  sin6.sin6_port = htons(port);
  sin6.sin6_scope_id = scope;
  return Endpoint::from_sockaddr(reinterpret_cast<const sockaddr*>(&sin6), sizeof sin6);
}

// --- Cidr ------------------------------------------------------------------------------------

Checked<Cidr> Cidr::parse(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Checked<Cidr>::failure(std::string(why) +
                                  "; expected ADDRESS/PREFIX, e.g. 10.0.0.0/8 or 2001:db8::/32");
  };
  std::string addr(text);
  std::optional<uint64_t> prefix;
  if (auto slash = addr.find('/'); slash != std::string::npos) {
    prefix = parse_digits(std::string_view(addr).substr(slash + 1));
    if (!prefix) return fail("the prefix length is not a number");
    addr.resize(slash);
  }
  Cidr c;
  unsigned bits = 0;
  if (inet_pton(AF_INET, addr.c_str(), c.bytes_.data()) == 1) {
    c.family_ = AF_INET;
    bits = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), c.bytes_.data()) == 1) {
    c.family_ = AF_INET6;
    bits = 128;
  } else {
    return fail("not a numeric IPv4 or IPv6 address");
  }
  if (prefix && *prefix > bits) return fail("the prefix length is larger than the address");
  c.prefix_ = prefix ? static_cast<unsigned>(*prefix) : bits;
  for (unsigned i = c.prefix_; i < bits; ++i) {
    if (c.bytes_[i / 8] & (0x80u >> (i % 8))) {
      Cidr net = c;
      for (unsigned j = c.prefix_; j < bits; ++j) {
        net.bytes_[j / 8] = static_cast<uint8_t>(net.bytes_[j / 8] & ~(0x80u >> (j % 8)));
      }
      return fail("the address has bits set beyond the prefix (did you mean " + net.to_string() +
                  "?)");
    }
  }
  return c;
}

bool Cidr::contains(const sockaddr* sa) const noexcept {
  if (sa == nullptr) return false;
  uint8_t addr[16];
  if (family_ == AF_INET) {
    auto v4 = v4_of(sa);
    if (!v4) return false;
    uint32_t n = htonl(*v4);
    std::memcpy(addr, &n, 4);
  } else {
    if (sa->sa_family != AF_INET6) return false;
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    std::memcpy(addr, in6.sin6_addr.s6_addr, 16);
  }
  unsigned full = prefix_ / 8;
  if (std::memcmp(addr, bytes_.data(), full) != 0) return false;
  unsigned rest = prefix_ % 8;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xffu << (8 - rest));
  return (addr[full] & mask) == (bytes_[full] & mask);
}

std::string Cidr::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family_, bytes_.data(), buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix_);
}

}  // namespace hg::base
