// The syntax of setting values: byte counts, durations, zones, and the setters of the key
// table (config_keys.h) that need more than a line. Each setter either stores the value or
// returns what is allowed; the caller adds where the value came from. The wording of these
// lines is what the operator reads (and what the tests hold), so it changes only on purpose.
#include <sys/un.h>

#include <pwd.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include "base/checked_open.h"
#include "base/duration.h"
#include "cache/shadow.h"
#include "resolver/config_keys.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/secret_file.h"
#include "resolver/text.h"

namespace hg::resolver {
using std::chrono::milliseconds;
using std::chrono::seconds;
using text::parse_digits;
using text::quote;

namespace {

// RFC 2181 §8: a TTL is an unsigned 32-bit number whose top bit must be zero.
constexpr int64_t kMaxTtl = 2147483647;
constexpr uint64_t kMinCacheSize = uint64_t{64} << 10;
constexpr uint64_t kMaxCacheSize = uint64_t{1} << 40;
constexpr int64_t kMaxTimeoutMs = 60000;

// Splits "123abc" into the leading digits and the rest.
std::pair<std::string_view, std::string_view> split_number(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9')
    ++i;
  return {s.substr(0, i), s.substr(i)};
}

// --private-address private-ranges: where a public name should never point (DNS rebinding):
// "this network" (RFC 1122), loopback, RFC 1918, shared address space (RFC 6598),
// link-local, the unspecified and loopback IPv6 addresses, ULA (RFC 4193), IPv6 link-local,
// and IPv4-mapped IPv6 (whose v4 part the blocks above already cover, but which a browser
// reaches all the same).
constexpr const char* kPrivateRanges[] = {"0.0.0.0/8",      "10.0.0.0/8",     "100.64.0.0/10",
                                          "127.0.0.0/8",    "169.254.0.0/16", "172.16.0.0/12",
                                          "192.168.0.0/16", "::/128",         "::1/128",
                                          "fc00::/7",       "fe80::/10",      "::ffff:0:0/96"};

constexpr std::string_view kTtlAllowed =
    "expected seconds from 0 to 2147483647 (RFC 2181 §8), optionally with a unit s, m, h or "
    "d, e.g. 3600 or 1h";
constexpr std::string_view kTimeoutAllowed =
    "expected milliseconds from 1 to 60000, optionally with a unit ms or s, e.g. 1800 or 2s";
constexpr std::string_view kListenAllowed =
    "expected a numeric IPv4 address or a bracketed IPv6 address with a port, e.g. "
    "127.0.0.1:53 or [::1]:53";

// --client-share: a fraction of the in-flight table ("1/8", "0.125"; at least one entry) or a
// number of entries; "off" is 0 (no limit). A fraction is told from a count by its '/' or '.'.
constexpr uint64_t kInflightEntries = 4096;  // resolver/query/shared.cc's table
constexpr std::string_view kClientShareAllowed =
    "expected a fraction of the 4096-entry in-flight table above 0 and at most 1 (e.g. 1/8 or "
    "0.125), a number of entries from 1 to 4096, or off";

std::optional<unsigned> parse_client_share(std::string_view v) {
  if (v == "off") return 0u;
  if (auto slash = v.find('/'); slash != std::string_view::npos) {
    auto num = parse_digits(v.substr(0, slash));
    auto den = parse_digits(v.substr(slash + 1));
    if (!num || !den || *num == 0 || *den == 0 || *num > *den) return std::nullopt;
    return static_cast<unsigned>(std::max<uint64_t>(1, kInflightEntries * *num / *den));
  }
  if (auto dot = v.find('.'); dot != std::string_view::npos) {
    // Decimal digits only (no exponent, sign or inf): "0.125", "1.0", ".25".
    auto whole = dot == 0 ? std::optional<uint64_t>(0) : parse_digits(v.substr(0, dot));
    const std::string_view frac = v.substr(dot + 1);
    if (!whole || *whole > 1 || frac.empty() || frac.size() > 9) return std::nullopt;
    auto digits = parse_digits(frac);
    if (!digits) return std::nullopt;
    uint64_t scale = 1;
    for (std::size_t i = 0; i < frac.size(); ++i)
      scale *= 10;
    const uint64_t num = *whole * scale + *digits;  // the value is num / scale
    if (num == 0 || num > scale) return std::nullopt;
    return static_cast<unsigned>(std::max<uint64_t>(1, kInflightEntries * num / scale));
  }
  auto n = parse_digits(v);
  if (!n || *n < 1 || *n > kInflightEntries) return std::nullopt;
  return static_cast<unsigned>(*n);
}

// ttl-cap and shadow-ttl: ZONE=SECONDS, the zone checked like every zone (and by the caller's
// validate_zone), each zone once.
// `max` entries at most (0: no limit), else `full`.
std::optional<std::string> add_zone_ttl(std::vector<TtlCap>& list, std::string_view v,
                                        const ParseOptions& o, std::string_view allowed,
                                        std::string_view twice, std::size_t max = 0,
                                        std::string_view full = {}) {
  auto eq = v.rfind('=');
  if (eq == std::string_view::npos) return std::string(allowed);
  std::string_view zone = v.substr(0, eq);
  auto secs = parse_seconds(v.substr(eq + 1));
  if (!secs || secs->count() > kMaxTtl) return std::string(allowed);
  if (auto why = settings::zone_syntax_error(zone)) return *why + "; " + std::string(allowed);
  if (o.validate_zone) {
    if (auto why = o.validate_zone(zone)) return *why + "; " + std::string(allowed);
  }
  for (const TtlCap& t : list) {
    if (settings::ieq(t.zone, zone)) return std::string(twice);
  }
  if (max != 0 && list.size() >= max) return std::string(full);
  list.push_back(TtlCap{std::string(zone), *secs});
  return std::nullopt;
}

std::optional<std::string> set_size(uint64_t& out, std::string_view v, std::string_view example) {
  auto b = parse_bytes(v);
  if (!b || *b < kMinCacheSize || *b > kMaxCacheSize) {
    return "expected a size from 64KiB to 1TiB: bytes, or a number with a suffix K, M, G, KiB, "
           "MiB or GiB (all powers of 1024), e.g. " +
           std::string(example);
  }
  out = *b;
  return std::nullopt;
}

}  // namespace

// --- value syntax ----------------------------------------------------------------------------

std::optional<uint64_t> parse_bytes(std::string_view text) {
  auto [num, suffix] = split_number(text);
  auto n = parse_digits(num);
  if (!n) return std::nullopt;
  uint64_t mult = 0;
  if (suffix.empty() || settings::ieq(suffix, "B")) {
    mult = 1;
  } else if (settings::ieq(suffix, "K") || settings::ieq(suffix, "KiB")) {
    mult = uint64_t{1} << 10;
  } else if (settings::ieq(suffix, "M") || settings::ieq(suffix, "MiB")) {
    mult = uint64_t{1} << 20;
  } else if (settings::ieq(suffix, "G") || settings::ieq(suffix, "GiB")) {
    mult = uint64_t{1} << 30;
  } else {
    return std::nullopt;
  }
  uint64_t out = 0;
  if (__builtin_mul_overflow(*n, mult, &out)) return std::nullopt;
  return out;
}

std::optional<seconds> parse_seconds(std::string_view text) {
  return base::parse_seconds(text);
}

std::optional<uint32_t> parse_ttl_arg(std::string_view text, int64_t max, std::string& why) {
  const auto secs = parse_seconds(text);
  if (secs && secs->count() >= 0 && secs->count() <= max)
    return static_cast<uint32_t>(secs->count());
  why = "'" + std::string(text.substr(0, 64)) + "' is not a TTL: expected seconds from 0 to " +
        std::to_string(max) + " (or 30s, 5m, 1h, 1d)";
  return std::nullopt;
}

std::optional<milliseconds> parse_millis(std::string_view text) {
  return base::parse_duration(text, milliseconds{1});
}

namespace settings {

bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 1035 §2.3.4 limits in presentation form: labels 1..63 octets, the name at most 253
// characters without the trailing dot (255 octets in wire form).
std::optional<std::string> zone_syntax_error(std::string_view zone) {
  if (zone == ".") return std::nullopt;
  std::string_view z = zone;
  if (!z.empty() && z.back() == '.') z.remove_suffix(1);
  if (z.empty()) return "the zone is empty";
  if (z.size() > 253) return "the zone is longer than 253 characters";
  std::size_t start = 0;
  while (start <= z.size()) {
    std::size_t dot = z.find('.', start);
    if (dot == std::string_view::npos) dot = z.size();
    std::size_t len = dot - start;
    if (len == 0) return "the zone has an empty label";
    if (len > 63) return "a label is longer than 63 characters";
    for (char c : z.substr(start, len)) {
      if (c <= ' ' || c == '=' || c == '\\' || c == '"' || static_cast<unsigned char>(c) >= 0x7f) {
        return "the zone contains a character that is not allowed";
      }
    }
    start = dot + 1;
  }
  return std::nullopt;
}

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string bytes_text(uint64_t b) {
  if (b != 0 && b % (uint64_t{1} << 30) == 0) return std::to_string(b >> 30) + "GiB";
  if (b != 0 && b % (uint64_t{1} << 20) == 0) return std::to_string(b >> 20) + "MiB";
  if (b != 0 && b % (uint64_t{1} << 10) == 0) return std::to_string(b >> 10) + "KiB";
  return std::to_string(b);
}

std::string name_value(std::string_view source_file, std::string_view key, std::string_view value) {
  if (source_file.empty()) return "--" + std::string(key) + " " + quote(value);
  return std::string(source_file) + ": " + std::string(key) + " = " + quote(value);
}

// --- setters ---------------------------------------------------------------------------------

std::optional<std::string> set_ttl(seconds& out, std::string_view v) {
  auto s = parse_seconds(v);
  if (!s || s->count() > kMaxTtl) return std::string(kTtlAllowed);
  out = *s;
  return std::nullopt;
}

std::optional<std::string> set_timeout(milliseconds& out, std::string_view v) {
  auto ms = parse_millis(v);
  if (!ms || ms->count() < 1 || ms->count() > kMaxTimeoutMs) return std::string(kTimeoutAllowed);
  out = *ms;
  return std::nullopt;
}

std::optional<std::string> set_cache_size(Config& c, std::string_view v, const ParseOptions&) {
  return set_size(c.cache_size, v, "64MiB");
}

std::optional<std::string> set_shadow_size(Config& c, std::string_view v, const ParseOptions&) {
  return set_size(c.shadow_size, v, "8MiB");
}

std::optional<std::string> add_listen(Config& c, std::string_view v, const ParseOptions&) {
  auto e = parse_endpoint(v, 53);
  if (!e) return std::string(kListenAllowed);
  if (std::find(c.listen.begin(), c.listen.end(), *e) != c.listen.end()) {
    return "this address is already listed; give each listen address once";
  }
  c.listen.push_back(*e);
  return std::nullopt;
}

std::optional<std::string> set_metrics(Config& c, std::string_view v, const ParseOptions&) {
  auto e = parse_endpoint(v, std::nullopt);
  if (!e) return std::string(kListenAllowed);
  c.metrics = *e;
  return std::nullopt;
}

std::optional<std::string> add_upstream(Config& c, std::string_view v, const ParseOptions&) {
  if (is_tls_spec(v)) {  // DNS over TLS (resolver/upstream/dot.h)
    auto t = parse_tls_upstream(v);
    if (!t) return t.error();
    c.upstreams.push_back(t->endpoint);
    c.tls_upstreams.push_back(t.value());
    c.upstreams_from_file = false;
    return std::nullopt;
  }
  auto e = parse_endpoint(v, 53);
  if (!e || e->port() == 0) {
    return "expected a numeric IPv4 or IPv6 address with an optional port 1-65535 "
           "(default 53), e.g. 192.0.2.1, 192.0.2.1:5353, 2001:db8::1 or "
           "[2001:db8::1]:5353, or tls://ADDR[:PORT][#AUTH-NAME] for DNS over TLS";
  }
  c.upstreams.push_back(*e);
  c.upstreams_from_file = false;
  return std::nullopt;
}

std::optional<std::string> set_dnssec(Config& c, std::string_view v, const ParseOptions&) {
  if (v == "off") {
    c.dnssec = Config::Dnssec::Off;
  } else if (v == "validate") {
    c.dnssec = Config::Dnssec::Validate;
  } else if (v == "require") {
    c.dnssec = Config::Dnssec::Require;
  } else {
    return "expected validate, require or off";
  }
  c.dnssec_given = true;
  return std::nullopt;
}

std::optional<std::string> add_ttl_cap(Config& c, std::string_view v, const ParseOptions& o) {
  return add_zone_ttl(c.ttl_caps, v, o,
                      "expected ZONE=SECONDS with SECONDS from 0 to 2147483647, e.g. "
                      "shop.example.com=60",
                      "this zone already has a cap; give each zone once");
}

// shadow-ttl ZONE=SECONDS: the same syntax and checks as ttl-cap, and a bounded table.
std::optional<std::string> add_shadow_ttl(Config& c, std::string_view v, const ParseOptions& o) {
  static const std::string full = "at most " + std::to_string(cache::ShadowTable::kMaxZones) +
                                  " shadow zones; shadow the zones of the cut-over only";
  return add_zone_ttl(
      c.shadow_ttls, v, o,
      "expected ZONE=SECONDS with SECONDS from 0 to 2147483647, e.g. www.example.com=60",
      "this zone already has a shadow TTL; give each zone once", cache::ShadowTable::kMaxZones,
      full);
}

std::optional<std::string> add_forward(Config& c, std::string_view v, const ParseOptions&) {
  auto fz = parse_forward_spec(v);
  if (!fz) return fz.error();
  for (const ForwardZone& f : c.forward_zones) {
    if (ieq(f.zone, fz->zone) || ieq(std::string(f.zone) + ".", fz->zone) ||
        ieq(f.zone, fz->zone + "."))
      return "this zone is already forwarded; give each zone once, with all its servers";
  }
  c.forward_zones.push_back(std::move(fz.value()));
  return std::nullopt;
}

std::optional<std::string> add_no_special_zone(Config& c, std::string_view v, const ParseOptions&) {
  if (!is_special_zone(v))
    return "not one of the built-in special-use zones (docs/local-names.md lists them; "
           "`hourglass-ctl route NAME` shows which answers a name); to send another "
           "zone elsewhere use --forward";
  const std::string zone = special_zone_key(v);
  if (std::find(c.no_special_zones.begin(), c.no_special_zones.end(), zone) ==
      c.no_special_zones.end())
    c.no_special_zones.push_back(zone);
  return std::nullopt;
}

std::optional<std::string> add_private_address(Config& c, std::string_view v, const ParseOptions&) {
  if (v == "private-ranges") {
    for (const char* b : kPrivateRanges)
      c.private_addresses.push_back(Cidr::parse(b).value());
    return std::nullopt;
  }
  auto cidr = Cidr::parse(v);
  if (!cidr) return cidr.error() + " (or private-ranges)";
  c.private_addresses.push_back(cidr.value());
  return std::nullopt;
}

std::optional<std::string> set_client_share(Config& c, std::string_view v, const ParseOptions&) {
  auto share = parse_client_share(v);
  if (!share) return std::string(kClientShareAllowed);
  c.client_share = *share;
  return std::nullopt;
}

std::optional<std::string> set_failing_zone_cap(Config& c, std::string_view v,
                                                const ParseOptions&) {
  if (v == "off") {
    c.failing_zone_cap = 0;
    return std::nullopt;
  }
  auto n = parse_digits(v);
  if (!n || *n < 1 || *n > kInflightEntries)
    return "expected a whole number from 1 to " + std::to_string(kInflightEntries) + ", or off";
  c.failing_zone_cap = static_cast<unsigned>(*n);
  return std::nullopt;
}

std::optional<std::string> set_client_rate(Config& c, std::string_view v, const ParseOptions&) {
  if (v == "off") {
    c.client_rate = 0;
    return std::nullopt;
  }
  auto n = parse_digits(v);
  if (!n || *n < 1 || *n > 1000000)
    return "expected queries per second, a whole number from 1 to 1000000, or off";
  c.client_rate = static_cast<unsigned>(*n);
  return std::nullopt;
}

std::optional<std::string> set_cache_file(Config& c, std::string_view v, const ParseOptions&) {
  if (v.empty() || v.back() == '/' || v.size() > 4000) {
    return "expected the path of a file (1 to 4000 bytes, not ending in '/'), e.g. "
           "/var/lib/hourglass/cache";
  }
  c.cache_file = std::string(v);
  return std::nullopt;
}

std::optional<std::string> set_cache_save_interval(Config& c, std::string_view v,
                                                   const ParseOptions&) {
  auto s = parse_seconds(v);
  if (!s || s->count() > 7 * 86400) {
    return "expected seconds from 0 (off) to 604800, optionally with a unit s, m, h or "
           "d, e.g. 300 or 5m";
  }
  c.cache_save_interval = *s;
  return std::nullopt;
}

std::optional<std::string> set_redis(Config& c, std::string_view v, const ParseOptions&) {
  constexpr std::string_view kAllowed =
      "expected ADDR:PORT with a numeric IP (e.g. 127.0.0.1:6379, [::1]:6379) or unix:PATH";
  RedisConfig& r = c.redis;
  if (v.starts_with("unix:")) {
    const std::string_view path = v.substr(5);
    if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) return std::string(kAllowed);
    r.unix_socket = true;
    r.path = std::string(path);
    r.target = std::string(v);
    return std::nullopt;
  }
  auto e = parse_endpoint(v, std::nullopt);
  if (!e || e->port() == 0) return std::string(kAllowed);
  r.unix_socket = false;
  r.host = e->ip_string();
  r.port = e->port();
  r.target = std::string(v);
  return std::nullopt;
}

std::optional<std::string> set_redis_password(Config& c, std::string_view v, const ParseOptions&) {
  std::string pw;
  if (auto err = read_secret_file(std::string(v), 1, pw)) return err;
  c.redis.password_file = std::string(v);
  c.redis.password = std::move(pw);
  return std::nullopt;
}

std::optional<std::string> set_fleet_key(Config& c, std::string_view v, const ParseOptions&) {
  std::string key;
  if (auto err = read_secret_file(std::string(v), fleet::kMinSecretSize, key)) return err;
  c.redis.key_file = std::string(v);
  c.redis.fleet_key = std::move(key);
  return std::nullopt;
}

// --user NAME: looked up now, so an unknown user stops the start before anything is bound,
// and the user's files count as trusted (base/checked_open.h) for the files read from here on.
std::optional<std::string> resolve_user(Config& c, std::string_view v) {
  if (v.empty() || v.size() > 256) return "expected the name of a user, e.g. hourglass";
  const std::string name(v);
  errno = 0;
  const passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) {
    return "no such user (getent passwd " + name +
           " finds nothing); create it (adduser --system --group --no-create-home " + name +
           ") or name another";
  }
  if (pw->pw_uid == 0)
    return "is root (uid 0); name an unprivileged user, or give --allow-root instead";
  c.user = name;
  c.user_uid = pw->pw_uid;
  c.user_gid = pw->pw_gid;
  // Only before the switch: a SIGHUP re-read (as the user) must not change whom files may
  // belong to.
  if (::geteuid() == 0) base::trust_daemon_uid(pw->pw_uid);
  return std::nullopt;
}

}  // namespace settings
}  // namespace hg::resolver
