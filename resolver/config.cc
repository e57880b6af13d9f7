// Config parsing: one table of keys drives the command line (CLI11), the TOML file (toml++)
// and the error messages, so a flag and its file key can never drift apart.
//
// Every value arrives as text (a TOML integer is turned into its decimal text) and goes
// through the same setter, which either stores it or explains what is allowed. CLI11 and
// toml++ only split the input; they never convert values, so their own wording never
// reaches the user and both sources produce the same messages.
#include "resolver/config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pwd.h>
#include <sys/un.h>

#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "base/checked_open.h"
#include "base/duration.h"
#include "cache/shadow.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/secret_file.h"
#include "resolver/tap/dnstap_writer.h"
#include "resolver/text.h"

#ifndef HG_VERSION
#define HG_VERSION "unknown"
#endif

namespace hg::resolver {
using text::parse_digits;
using text::quote;
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// RFC 2181 §8: a TTL is an unsigned 32-bit number whose top bit must be zero.
constexpr int64_t kMaxTtl = 2147483647;
constexpr uint64_t kMinCacheSize = uint64_t{64} << 10;
constexpr uint64_t kMaxCacheSize = uint64_t{1} << 40;
constexpr int64_t kMaxTimeoutMs = 60000;
constexpr unsigned kMaxThreads = 256;

bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

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

// --- the table of keys -----------------------------------------------------------------------

enum class Kind { Scalar, List, Flag };

// Returns nullopt when the value was stored, else what is allowed (for the error line).
using Setter = std::optional<std::string> (*)(Config&, std::string_view, const ParseOptions&);
using Clearer = void (*)(Config&);

struct Key {
  std::string_view name;
  Kind kind;
  std::string_view type_name;
  std::string_view help;
  Setter set;
  Clearer clear = nullptr;
};

constexpr std::string_view kTtlAllowed =
    "expected seconds from 0 to 2147483647 (RFC 2181 §8), optionally with a unit s, m, h or "
    "d, e.g. 3600 or 1h";
constexpr std::string_view kTimeoutAllowed =
    "expected milliseconds from 1 to 60000, optionally with a unit ms or s, e.g. 1800 or 2s";
constexpr std::string_view kListenAllowed =
    "expected a numeric IPv4 address or a bracketed IPv6 address with a port, e.g. "
    "127.0.0.1:53 or [::1]:53";

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

// shadow-ttl ZONE=SECONDS: the same syntax and checks as ttl-cap.
std::optional<std::string> add_shadow_ttl(Config& c, std::string_view v, const ParseOptions& o) {
  constexpr std::string_view kAllowed =
      "expected ZONE=SECONDS with SECONDS from 0 to 2147483647, e.g. www.example.com=60";
  auto eq = v.rfind('=');
  if (eq == std::string_view::npos) return std::string(kAllowed);
  std::string_view zone = v.substr(0, eq);
  auto secs = parse_seconds(v.substr(eq + 1));
  if (!secs || secs->count() > kMaxTtl) return std::string(kAllowed);
  if (auto why = zone_syntax_error(zone)) return *why + "; " + std::string(kAllowed);
  if (o.validate_zone) {
    if (auto why = o.validate_zone(zone)) return *why + "; " + std::string(kAllowed);
  }
  for (const TtlCap& t : c.shadow_ttls) {
    if (ieq(t.zone, zone)) return "this zone already has a shadow TTL; give each zone once";
  }
  if (c.shadow_ttls.size() >= cache::ShadowTable::kMaxZones)
    return "at most " + std::to_string(cache::ShadowTable::kMaxZones) +
           " shadow zones; shadow the zones of the cut-over only";
  c.shadow_ttls.push_back(TtlCap{std::string(zone), *secs});
  return std::nullopt;
}

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

std::optional<std::string> set_redis(RedisConfig& r, std::string_view v) {
  constexpr std::string_view kAllowed =
      "expected ADDR:PORT with a numeric IP (e.g. 127.0.0.1:6379, [::1]:6379) or unix:PATH";
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

std::optional<std::string> set_redis_password(RedisConfig& r, std::string_view v) {
  std::string pw;
  if (auto err = read_secret_file(std::string(v), 1, pw)) return err;
  r.password_file = std::string(v);
  r.password = std::move(pw);
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

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"listen", Kind::List, "ADDR:PORT",
       "Address to serve DNS on, UDP and TCP; repeatable (default 127.0.0.1:53)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto e = parse_endpoint(v, 53);
         if (!e) return std::string(kListenAllowed);
         if (std::find(c.listen.begin(), c.listen.end(), *e) != c.listen.end()) {
           return "this address is already listed; give each listen address once";
         }
         c.listen.push_back(*e);
         return std::nullopt;
       },
       [](Config& c) { c.listen.clear(); }},
      {"upstream", Kind::List, "ADDR[:PORT]",
       "Upstream resolver to forward to, port 53 by default; repeatable (default: the "
       "nameservers of --upstream-file)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
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
       },
       [](Config& c) {
         c.upstreams.clear();
         c.tls_upstreams.clear();
       }},
      {"tls-ca-file", Kind::Scalar, "PATH",
       "PEM CA certificates trusted for tls:// upstreams besides the system store",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a PEM file of CA certificates";
         c.tls_ca_file = std::string(v);
         return std::nullopt;
       }},
      {"tls-pin", Kind::List, "sha256/BASE64",
       "SPKI pin a tls:// upstream's key must match (any one of them); repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto p = parse_tls_pin(v);
         if (!p) return p.error();
         c.tls_pins.emplace_back(v);
         return std::nullopt;
       },
       [](Config& c) { c.tls_pins.clear(); }},
      {"dnssec", Kind::Scalar, "MODE",
       "validate: check upstream answers' DNSSEC signatures from the trust anchor down (AD for "
       "the secure, SERVFAIL for the bogus) when the upstreams deliver DNSSEC records, else "
       "pass answers on without AD and warn; require: the same, but SERVFAIL when they do not; "
       "off: pass answers on unchecked (default validate)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
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
       }},
      {"insecure-domain", Kind::List, "ZONE",
       "Do not validate names at or below ZONE (a negative trust anchor, RFC 7646): answered "
       "without AD and never bogus; repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = zone_syntax_error(v)) return *why;
         c.insecure_domains.emplace_back(v);
         return std::nullopt;
       },
       [](Config& c) { c.insecure_domains.clear(); }},
      {"trust-anchor", Kind::Scalar, "FILE",
       "DS or DNSKEY records, one per line, that --dnssec validate starts from (default "
       "/usr/share/dns/root.key, from Debian's dns-root-data)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a trust anchor file";
         c.trust_anchor_file = std::string(v);
         return std::nullopt;
       }},
      {"trust-ad", Kind::List, "ADDR[:PORT]",
       "pass on the AD bit of this tls:// upstream (port 853 by default), whose certificate "
       "name is checked; every other upstream's AD is cleared; repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto e = parse_endpoint(v, uint16_t{853});
         if (!e)
           return "expected the address of a tls:// upstream, e.g. 192.0.2.1 or [2001:db8::1]:853";
         c.trust_ad.push_back(*e);
         return std::nullopt;
       },
       [](Config& c) { c.trust_ad.clear(); }},
      {"upstream-file", Kind::Scalar, "PATH",
       "resolv.conf-style file whose nameserver lines are the upstreams when no --upstream "
       "is given; re-read on SIGHUP (default /etc/resolv.conf)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a resolv.conf-style file";
         c.upstream_file = std::string(v);
         return std::nullopt;
       }},
      {"cache-size", Kind::Scalar, "BYTES", "Cache size limit (default 64MiB)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto b = parse_bytes(v);
         if (!b || *b < kMinCacheSize || *b > kMaxCacheSize) {
           return "expected a size from 64KiB to 1TiB: bytes, or a number with a suffix K, M, "
                  "G, KiB, MiB or GiB (all powers of 1024), e.g. 64MiB";
         }
         c.cache_size = *b;
         return std::nullopt;
       }},
      {"cache-min-ttl", Kind::Scalar, "SECONDS", "Lowest TTL a cached record gets (default 0)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return set_ttl(c.cache_min_ttl, v);
       }},
      {"cache-max-ttl", Kind::Scalar, "SECONDS",
       "Highest TTL a cached record gets (default 604800)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return set_ttl(c.cache_max_ttl, v);
       }},
      {"negative-max-ttl", Kind::Scalar, "SECONDS",
       "Highest TTL of a cached NXDOMAIN/NODATA answer (default 3600)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return set_ttl(c.negative_max_ttl, v);
       }},
      {"stale-max", Kind::Scalar, "SECONDS",
       "How long after expiry an answer may still be served stale, 0 to disable (default "
       "86400)",
       [](Config& c, std::string_view v, const ParseOptions&) { return set_ttl(c.stale_max, v); }},
      {"stale-ttl", Kind::Scalar, "SECONDS", "TTL given to stale answers (default 30)",
       [](Config& c, std::string_view v, const ParseOptions&) { return set_ttl(c.stale_ttl, v); }},
      {"client-timeout", Kind::Scalar, "MS",
       "Answer from stale data when upstream has not answered after this long (default 1800)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return set_timeout(c.client_timeout, v);
       }},
      {"upstream-timeout", Kind::Scalar, "MS",
       "Answer SERVFAIL when upstream has not answered after this long and nothing stale is "
       "cached (default 3000)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return set_timeout(c.upstream_timeout, v);
       }},
      {"allow", Kind::List, "CIDR",
       "Client addresses to serve, others get REFUSED; repeatable (default 127.0.0.0/8 and "
       "::1/128)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto cidr = Cidr::parse(v);
         if (!cidr) return cidr.error();
         c.allow.push_back(cidr.value());
         return std::nullopt;
       },
       [](Config& c) { c.allow.clear(); }},
      {"ttl-cap", Kind::List, "ZONE=SECONDS",
       "Cache records at or below ZONE with TTL at most SECONDS; repeatable",
       [](Config& c, std::string_view v, const ParseOptions& o) -> std::optional<std::string> {
         constexpr std::string_view kAllowed =
             "expected ZONE=SECONDS with SECONDS from 0 to 2147483647, e.g. "
             "shop.example.com=60";
         auto eq = v.rfind('=');
         if (eq == std::string_view::npos) return std::string(kAllowed);
         std::string_view zone = v.substr(0, eq);
         auto secs = parse_seconds(v.substr(eq + 1));
         if (!secs || secs->count() > kMaxTtl) return std::string(kAllowed);
         if (auto why = zone_syntax_error(zone)) {
           return *why + "; " + std::string(kAllowed);
         }
         if (o.validate_zone) {
           if (auto why = o.validate_zone(zone)) return *why + "; " + std::string(kAllowed);
         }
         for (const TtlCap& t : c.ttl_caps) {
           if (ieq(t.zone, zone)) return "this zone already has a cap; give each zone once";
         }
         c.ttl_caps.push_back(TtlCap{std::string(zone), *secs});
         return std::nullopt;
       },
       [](Config& c) { c.ttl_caps.clear(); }},
      {"shadow-ttl", Kind::List, "ZONE=SECONDS",
       "Count the upstream queries records at or below ZONE would cause with TTL at most "
       "SECONDS, while answering with the real TTLs; repeatable; re-read from --config on "
       "SIGHUP",
       [](Config& c, std::string_view v, const ParseOptions& o) -> std::optional<std::string> {
         return add_shadow_ttl(c, v, o);
       },
       [](Config& c) { c.shadow_ttls.clear(); }},
      // Routing (resolver/routing_settings.h, docs/local-names.md).
      {"forward", Kind::List, "ZONE=ADDR[:PORT][,...]",
       "Send names at or below ZONE to these servers instead of the upstreams (the longest "
       "matching zone wins); repeatable; re-read from --config on SIGHUP",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto fz = parse_forward_spec(v);
         if (!fz) return fz.error();
         for (const ForwardZone& f : c.forward_zones) {
           if (ieq(f.zone, fz->zone) || ieq(std::string(f.zone) + ".", fz->zone) ||
               ieq(f.zone, fz->zone + "."))
             return "this zone is already forwarded; give each zone once, with all its servers";
         }
         c.forward_zones.push_back(std::move(fz.value()));
         return std::nullopt;
       },
       [](Config& c) { c.forward_zones.clear(); }},
      {"no-special-zone", Kind::List, "ZONE",
       "Send this built-in special-use zone (test, local, home.arpa, a reverse zone...) to the "
       "upstreams instead of answering it here; repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (!is_special_zone(v))
           return "not one of the built-in special-use zones (docs/local-names.md lists them; "
                  "`hourglass-ctl route NAME` shows which answers a name); to send another "
                  "zone elsewhere use --forward";
         const std::string zone = special_zone_key(v);
         if (std::find(c.no_special_zones.begin(), c.no_special_zones.end(), zone) ==
             c.no_special_zones.end())
           c.no_special_zones.push_back(zone);
         return std::nullopt;
       },
       [](Config& c) { c.no_special_zones.clear(); }},
      {"single-label", Kind::Scalar, "MODE",
       "Single-label names (wpad, printer) asked for an address: nodata: answered NODATA here, "
       "never sent upstream; forward: sent to the default upstreams, e.g. a home router that "
       "knows its hosts' short names (default nodata)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v == "nodata") {
           c.single_label_forward = false;
         } else if (v == "forward") {
           c.single_label_forward = true;
         } else {
           return "expected nodata or forward";
         }
         return std::nullopt;
       }},
      {"hosts-file", Kind::List, "PATH",
       "Answer the names of this hosts(5) file (A, AAAA, PTR), re-read when it changes; "
       "repeatable; re-read from --config on SIGHUP",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a hosts file, e.g. /etc/hosts";
         c.hosts_files.emplace_back(v);
         return std::nullopt;
       },
       [](Config& c) { c.hosts_files.clear(); }},
      {"local-record", Kind::List, "'NAME TTL TYPE DATA'",
       "Answer NAME with this record (A, AAAA, CNAME, PTR, TXT, MX, SRV), never asking "
       "upstream; repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto r = parse_local_record(v);
         if (!r) return r.error();
         c.local_records.push_back(std::string(v));
         return std::nullopt;
       },
       [](Config& c) { c.local_records.clear(); }},
      {"shadow-size", Kind::Scalar, "BYTES",
       "Memory limit of the shadow-ttl table, keys and expiry times only (default 8MiB)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto b = parse_bytes(v);
         if (!b || *b < kMinCacheSize || *b > kMaxCacheSize) {
           return "expected a size from 64KiB to 1TiB: bytes, or a number with a suffix K, M, "
                  "G, KiB, MiB or GiB (all powers of 1024), e.g. 8MiB";
         }
         c.shadow_size = *b;
         return std::nullopt;
       }},
      {"threads", Kind::Scalar, "N", "Event-loop threads (default 1)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > kMaxThreads) return "expected a whole number from 1 to 256";
         c.threads = static_cast<unsigned>(*n);
         return std::nullopt;
       }},
      {"log-queries", Kind::Flag, "[=json]",
       "Log every query to stderr, one line each; =json writes JSON lines for log shippers",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v != "true" && v != "false" && v != "text" && v != "json")
           return "expected true or false, \"text\" or \"json\" (on the command line: nothing, "
                  "=text or =json)";
         c.log_queries = v != "false";
         c.log_queries_json = v == "json";
         return std::nullopt;
       }},
      {"no-0x20", Kind::Flag, "",
       "Send upstream query names in lower case instead of a random letter case (0x20) "
       "checked in the answer",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v != "true" && v != "false") return "expected no value (or true or false)";
         c.use_0x20 = v != "true";
         return std::nullopt;
       }},
      {"pass-any", Kind::Flag, "",
       "Forward queries of type ANY upstream instead of answering them here with the minimal "
       "RFC 8482 answer (one HINFO record)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v != "true" && v != "false") return "expected no value (or true or false)";
         c.minimal_any = v != "true";
         return std::nullopt;
       }},
      {"private-address", Kind::List, "CIDR",
       "Leave A/AAAA records in this block out of upstream answers (DNS-rebinding "
       "protection); repeatable; 'private-ranges' adds loopback, RFC 1918, link-local, ULA, "
       "0.0.0.0/8, 100.64.0.0/10 and IPv4-mapped IPv6",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v == "private-ranges") {
           for (const char* b : kPrivateRanges)
             c.private_addresses.push_back(Cidr::parse(b).value());
           return std::nullopt;
         }
         auto cidr = Cidr::parse(v);
         if (!cidr) return cidr.error() + " (or private-ranges)";
         c.private_addresses.push_back(cidr.value());
         return std::nullopt;
       },
       [](Config& c) { c.private_addresses.clear(); }},
      {"private-domain", Kind::List, "ZONE",
       "Names at or below ZONE may resolve to --private-address blocks (forward zones, hosts "
       "files and local records always may); repeatable",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = zone_syntax_error(v)) return *why;
         c.private_domains.emplace_back(v);
         return std::nullopt;
       },
       [](Config& c) { c.private_domains.clear(); }},
      {"user", Kind::Scalar, "NAME",
       "Started as root: once the sockets are bound and the files that need root are open, "
       "switch to this user (its uid and group, no supplementary groups, no capabilities), "
       "e.g. hourglass, the package's system user (default: stay as started)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         return resolve_user(c, v);
       }},
      {"allow-root", Kind::Flag, "",
       "Keep running as root when started as root without --user (not recommended: a flaw "
       "in hourglassd would then be a flaw with every privilege)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v != "true" && v != "false") return "expected no value (or true or false)";
         c.allow_root = v == "true";
         return std::nullopt;
       }},
      {"control", Kind::Scalar, "PATH", "Unix socket for hourglass-ctl (default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() >= sizeof(sockaddr_un{}.sun_path)) {
           return "expected a filesystem path of 1 to 107 bytes";
         }
         c.control_path = std::string(v);
         return std::nullopt;
       }},
      {"dnstap", Kind::Scalar, "PATH|unix:PATH",
       "Record client and upstream traffic as dnstap: a Frame Streams file, or unix:PATH for a "
       "Frame Streams socket; re-read from --config on SIGHUP, which also reopens a rotated file "
       "(default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = check_dnstap_target(v)) return why;
         c.dnstap = std::string(v);
         return std::nullopt;
       }},
      {"dnstap-identity", Kind::Scalar, "NAME",
       "Server name written into every dnstap message; re-read from --config on SIGHUP "
       "(default: the host name)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 255) return "expected a name of 1 to 255 bytes";
         c.dnstap_identity = std::string(v);
         return std::nullopt;
       }},
      {"metrics", Kind::Scalar, "ADDR:PORT",
       "Serve Prometheus metrics over HTTP on this address (default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto e = parse_endpoint(v, std::nullopt);
         if (!e) return std::string(kListenAllowed);
         c.metrics = *e;
         return std::nullopt;
       }},
      // Connection admission (resolver/net/conn_admission.h).
      {"tcp-max-per-source", Kind::Scalar, "N",
       "TCP connections one client address (IPv6: one /64) may hold per listener; a new one "
       "beyond closes that source's oldest idle connection (default 64)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > 256) return "expected a whole number from 1 to 256";
         c.tcp_max_per_source = static_cast<unsigned>(*n);
         return std::nullopt;
       }},
      // Fair shares of the in-flight table (resolver/query/inflight.h, docs/security.md).
      {"client-share", Kind::Scalar, "FRACTION|N|off",
       "In-flight upstream queries one client source (IPv4 /24, IPv6 /56, loopback per "
       "address) may have started, as a fraction of the 4096-entry table (1/8, 0.125) or a "
       "count; its next new name gets SERVFAIL (default 1/8: 512)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto share = parse_client_share(v);
         if (!share) return std::string(kClientShareAllowed);
         c.client_share = *share;
         return std::nullopt;
       }},
      {"failing-zone-cap", Kind::Scalar, "N|off",
       "In-flight upstream queries for a zone whose queries keep timing out; beyond it its new "
       "names get SERVFAIL at once (default 32)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v == "off") {
           c.failing_zone_cap = 0;
           return std::nullopt;
         }
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > kInflightEntries)
           return "expected a whole number from 1 to " + std::to_string(kInflightEntries) +
                  ", or off";
         c.failing_zone_cap = static_cast<unsigned>(*n);
         return std::nullopt;
       }},
      {"client-rate", Kind::Scalar, "N|off",
       "Queries per second one client source may send (burst: one second's worth); UDP "
       "queries beyond are dropped, TCP ones REFUSED (default off)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v == "off") {
           c.client_rate = 0;
           return std::nullopt;
         }
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > 1000000)
           return "expected queries per second, a whole number from 1 to 1000000, or off";
         c.client_rate = static_cast<unsigned>(*n);
         return std::nullopt;
       }},
      {"metrics-allow", Kind::List, "CIDR",
       "Addresses that may read --metrics, others are disconnected; repeatable (default: the "
       "--allow list)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto cidr = Cidr::parse(v);
         if (!cidr) return cidr.error();
         c.metrics_allow.push_back(cidr.value());
         return std::nullopt;
       },
       [](Config& c) { c.metrics_allow.clear(); }},
      {"cache-file", Kind::Scalar, "PATH",
       "Save the cache to this file at shutdown and on 'hourglass-ctl save', and load it at "
       "start (default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.back() == '/' || v.size() > 4000) {
           return "expected the path of a file (1 to 4000 bytes, not ending in '/'), e.g. "
                  "/var/lib/hourglass/cache";
         }
         c.cache_file = std::string(v);
         return std::nullopt;
       }},
      {"cache-save-interval", Kind::Scalar, "SECONDS",
       "With --cache-file, also save the cache this often while running (on a thread of its "
       "own, skipped while nothing changed), so a crash loses at most that much; 0 = only at "
       "stop and on 'hourglass-ctl save' (default 5m)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto s = parse_seconds(v);
         if (!s || s->count() > 7 * 86400) {
           return "expected seconds from 0 (off) to 604800, optionally with a unit s, m, h or "
                  "d, e.g. 300 or 5m";
         }
         c.cache_save_interval = *s;
         return std::nullopt;
       }},
      // The fleet's shared cache (resolver/fleet/fleet_cache.h).
      {"redis", Kind::Scalar, "ADDR:PORT|unix:PATH",
       "Share the cache and single-flight misses with other instances through this Redis "
       "(default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         return set_redis(c.redis, v);
       }},
      {"redis-password-file", Kind::Scalar, "PATH",
       "File whose first line is the Redis password (AUTH); default: no AUTH",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         return set_redis_password(c.redis, v);
       }},
      {"redis-db", Kind::Scalar, "N", "Redis database number (default 0)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n > 1000000) return "expected a database number from 0 to 1000000";
         c.redis.db = static_cast<unsigned>(*n);
         return std::nullopt;
       }},
      {"redis-prefix", Kind::Scalar, "TEXT",
       "Prefix of every Redis key and channel; instances with the same prefix form one fleet "
       "(default hg:)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 64 ||
             std::any_of(v.begin(), v.end(), [](char ch) { return ch <= ' ' || ch == 0x7f; }))
           return "expected 1 to 64 printable characters without spaces, e.g. hg:";
         c.redis.prefix = std::string(v);
         return std::nullopt;
       }},
      {"redis-timeout", Kind::Scalar, "MS",
       "Give up on a Redis reply after this long and ask upstream instead (default 20)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto ms = parse_millis(v);
         if (!ms || ms->count() < 1 || ms->count() > 10000)
           return "expected milliseconds from 1 to 10000, e.g. 20 or 20ms";
         c.redis.timeout = *ms;
         return std::nullopt;
       }},
      {"redis-user", Kind::Scalar, "NAME",
       "Redis 6 ACL user name to AUTH as, with --redis-password-file (default: none)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 128 ||
             std::any_of(v.begin(), v.end(), [](char ch) { return ch <= ' ' || ch == 0x7f; }))
           return "expected 1 to 128 printable characters without spaces, e.g. hourglass";
         c.redis.user = std::string(v);
         return std::nullopt;
       }},
      {"fleet-key-file", Kind::Scalar, "PATH",
       "File whose first line is a secret shared by the fleet (at least 32 bytes, mode 0600): "
       "authenticate every Redis value and fleet message with it (default: Redis is trusted)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         std::string key;
         if (auto err = read_secret_file(std::string(v), fleet::kMinSecretSize, key)) return err;
         c.redis.key_file = std::string(v);
         c.redis.fleet_key = std::move(key);
         return std::nullopt;
       }},
  };
  return k;
}

const Key* find_key(std::string_view name) {
  for (const Key& k : keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// Where a value came from, for the error line.
std::string name_value(std::string_view source_file, std::string_view key, std::string_view value) {
  if (source_file.empty()) return "--" + std::string(key) + " " + quote(value);
  return std::string(source_file) + ": " + std::string(key) + " = " + quote(value);
}

// --- TOML -----------------------------------------------------------------------------------

// The text of a scalar TOML value, or nullopt for tables, arrays, floats, dates.
std::optional<std::string> toml_scalar_text(const toml::node& n) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  return std::nullopt;
}

std::string toml_display(const toml::node& n) {
  if (auto t = toml_scalar_text(n)) return *t;
  std::ostringstream os;
  if (auto b = n.as_boolean()) {
    os << (b->get() ? "true" : "false");
  } else if (auto f = n.as_floating_point()) {
    os << f->get();
  } else if (n.is_array()) {
    os << "[...]";
  } else {
    os << "{...}";
  }
  return os.str();
}

// The values a TOML key provides, as text, or an error line.
Checked<std::vector<std::string>> toml_values(const Key& key, const toml::node& n,
                                              const std::string& path) {
  std::vector<std::string> out;
  auto bad = [&](std::string_view what) {
    return Checked<std::vector<std::string>>::failure(name_value(path, key.name, toml_display(n)) +
                                                      ": " + std::string(what));
  };
  switch (key.kind) {
    case Kind::Flag:
      if (auto b = n.as_boolean()) {
        out.push_back(b->get() ? "true" : "false");
        return out;
      }
      if (auto str = n.as_string(); str && key.name == "log-queries") {
        out.push_back(str->get());
        return out;
      }
      return bad("expected true or false");
    case Kind::Scalar:
      if (auto t = toml_scalar_text(n)) {
        out.push_back(*t);
        return out;
      }
      return bad("expected a string or an integer");
    case Kind::List:
      // A list key takes an array, even of one value (the form --check-config prints): one
      // spelling per kind of key, and a file that says plainly that it replaces the list.
      if (auto t = toml_scalar_text(n)) {
        std::string fix = std::string(key.name) + " = [\"" + *t + "\"]";
        if (key.name == "ttl-cap" || key.name == "shadow-ttl")
          fix += " (or a [" + std::string(key.name) + "] table of \"ZONE\" = SECONDS)";
        return bad(std::string(key.name) + " is a list, even of one value: write " + fix);
      }
      if (auto arr = n.as_array()) {
        for (const toml::node& e : *arr) {
          auto t = toml_scalar_text(e);
          if (!t) return bad("expected an array of strings, e.g. [\"127.0.0.1:53\"]");
          out.push_back(*t);
        }
        return out;
      }
      // ttl-cap may also be a table: [ttl-cap] "shop.example.com" = 60
      if (auto tbl = n.as_table(); tbl && key.name == "forward") {
        // [forward] "corp.example" = ["10.8.0.1", "10.8.0.2:5353"] (or one string)
        for (auto&& [zone, servers] : *tbl) {
          std::string list;
          if (auto t = toml_scalar_text(servers)) {
            list = *t;
          } else if (auto sa = servers.as_array()) {
            for (const toml::node& e : *sa) {
              auto one = toml_scalar_text(e);
              if (!one) return bad("expected a table of ZONE = [\"ADDR[:PORT]\", ...]");
              list += (list.empty() ? "" : ",") + *one;
            }
          } else {
            return bad("expected a table of ZONE = [\"ADDR[:PORT]\", ...]");
          }
          out.push_back(std::string(zone.str()) + "=" + list);
        }
        return out;
      }
      if (auto tbl = n.as_table(); tbl && (key.name == "ttl-cap" || key.name == "shadow-ttl")) {
        for (auto&& [zone, secs] : *tbl) {
          auto t = toml_scalar_text(secs);
          if (!t) return bad("expected a table of ZONE = SECONDS, e.g. \"example.com\" = 60");
          out.push_back(std::string(zone.str()) + "=" + *t);
        }
        return out;
      }
      return bad("expected a string or an array of strings");
  }
  return out;
}

// The --config file: read under the shared rules (base/checked_open.h: no symbolic link, owned
// by root or the daemon's user, writable by no one else), then parsed. A file others may not
// read (it may hold the Redis password) has none of its text quoted in the error.
constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;

std::optional<std::string> read_toml(const std::string& path, toml::table& tbl,
                                     bool& private_text) {
  auto text = read_small_file(path, kMaxConfigFileBytes);
  if (!text) return "--config " + text.error();
  private_text = text.value().private_text;
  try {
    tbl = toml::parse(text.value().text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    std::string msg = "--config " + quote(path) + ": ";
    if (where.line > 0) {
      msg +=
          "line " + std::to_string(where.line) + ", column " + std::to_string(where.column) + ": ";
    }
    std::string desc(e.description());
    std::replace(desc.begin(), desc.end(), '\n', ' ');
    if (private_text)
      desc = "not TOML (the text is not quoted: the file is not readable by every user)";
    return msg + desc + "; expected a TOML file of key = value lines, e.g. cache-size = \"64MiB\"";
  }
  return std::nullopt;
}

/// At most this many mistakes of one file are listed (then how many more).
constexpr std::size_t kMaxConfigErrors = 20;

std::optional<std::string> apply_toml(Config& c, const std::string& path,
                                      const ParseOptions& options, bool& file_upstream) {
  toml::table tbl;
  bool private_text = false;
  if (auto err = read_toml(path, tbl, private_text)) return err;
  // Every mistake of the file is reported, one line each, naming its line: an operator fixing
  // a file should not need one run per mistake. The Config is not used when there is one.
  std::string errors;
  std::size_t count = 0;
  auto report = [&](const toml::node& where, std::string text) {
    if (++count > kMaxConfigErrors) return;
    const auto line = where.source().begin.line;
    // "PATH: ..." becomes "PATH:LINE: ...".
    if (line > 0 && text.starts_with(path + ": "))
      text.insert(path.size(), ":" + std::to_string(line));
    errors += (errors.empty() ? "" : "\n") + text;
  };
  for (auto&& [k, node] : tbl) {
    std::string_view name = k.str();
    const Key* key = find_key(name);
    if (key == nullptr) {
      if (private_text) {
        report(node, path + ": an unknown key (not quoted: the file is not readable by every " +
                         "user); the keys are the flag names without the dashes, e.g. cache-size");
        continue;
      }
      std::string msg = path + ": unknown key " + quote(name) + "; the keys are the flag names " +
                        "without the dashes, e.g. cache-size";
      std::string dashed(name);
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      if (dashed != name && find_key(dashed) != nullptr) msg += " (did you mean " + dashed + "?)";
      report(node, std::move(msg));
      continue;
    }
    // A value of a file others may not read is not quoted; the key's name is ours.
    auto refused = [&](const std::string& why) -> std::string {
      if (!private_text) return why;
      return path + ": " + std::string(key->name) +
             ": a value was refused (not quoted: the file is not readable by every user); " +
             "compare it with what hourglassd --help says of --" + std::string(key->name);
    };
    auto values = toml_values(*key, node, path);
    if (!values) {
      report(node, refused(values.error()));
      continue;
    }
    if (key->clear) key->clear(c);
    for (const std::string& v : values.value()) {
      if (auto allowed = key->set(c, v, options)) {
        report(node, refused(name_value(path, key->name, v) + ": " + *allowed));
        break;
      }
    }
    if (key->name == "upstream") file_upstream = true;
  }
  if (count == 0) return std::nullopt;
  if (count > kMaxConfigErrors)
    errors += "\n" + path + ": and " + std::to_string(count - kMaxConfigErrors) + " more mistakes";
  return errors;
}

std::string render_help(CLI::App& app) {
  return app.help();
}

}  // namespace

// --- value syntax ----------------------------------------------------------------------------

std::optional<uint64_t> parse_bytes(std::string_view text) {
  auto [num, suffix] = split_number(text);
  auto n = parse_digits(num);
  if (!n) return std::nullopt;
  uint64_t mult = 0;
  if (suffix.empty() || ieq(suffix, "B")) {
    mult = 1;
  } else if (ieq(suffix, "K") || ieq(suffix, "KiB")) {
    mult = uint64_t{1} << 10;
  } else if (ieq(suffix, "M") || ieq(suffix, "MiB")) {
    mult = uint64_t{1} << 20;
  } else if (ieq(suffix, "G") || ieq(suffix, "GiB")) {
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

// --- forwarding loops ------------------------------------------------------------------------

std::optional<ForwardingLoop> find_forwarding_loop(std::span<const Endpoint> listen,
                                                   std::span<const Endpoint> upstreams,
                                                   std::span<const Endpoint> local_addresses) {
  auto is_local = [&](const Endpoint& e) {
    if (e.is_loopback() || e.is_unspecified()) return true;
    return std::any_of(local_addresses.begin(), local_addresses.end(),
                       [&](const Endpoint& l) { return l.same_ip(e); });
  };
  auto is_v4 = [](const Endpoint& e) {
    return e.family() == AF_INET ||
           (e.family() == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&e.v6().sin6_addr));
  };
  for (const Endpoint& u : upstreams) {
    for (const Endpoint& l : listen) {
      if (u.port() != l.port()) continue;
      bool loop = false;
      if (l.is_unspecified()) {
        // 0.0.0.0 receives on every local IPv4 address; :: on every address of both
        // families (Linux dual-stack default, net.ipv6.bindv6only=0).
        loop = is_local(u) && (l.family() == AF_INET6 || is_v4(u));
      } else if (u.is_unspecified()) {
        // Sending to 0.0.0.0 or :: reaches this host.
        loop = is_local(l);
      } else {
        loop = u.same_ip(l);
      }
      if (loop) return ForwardingLoop{u, l};
    }
  }
  return std::nullopt;
}

std::vector<Endpoint> local_interface_addresses() {
  std::vector<Endpoint> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    socklen_t len = i->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (auto e = Endpoint::from_sockaddr(i->ifa_addr, len)) {
      e->set_port(0);
      out.push_back(*e);
    }
  }
  freeifaddrs(list);
  return out;
}

std::string describe(const ForwardingLoop& loop, std::string_view upstream_source) {
  return "forwarding loop: upstream " + loop.upstream.to_string() + " (from " +
         std::string(upstream_source) + ") is our own listen address " + loop.listen.to_string() +
         ", so every query would come back to us; point --upstream-file at the real servers "
         "(e.g. /run/systemd/resolve/resolv.conf or a file with the network's nameservers) "
         "or give --upstream ADDR[:PORT]";
}

// --- Config ----------------------------------------------------------------------------------

std::vector<Endpoint> Config::default_listen() {
  return {*parse_endpoint("127.0.0.1:53", 53)};
}

std::vector<Cidr> Config::default_allow() {
  return {Cidr::parse("127.0.0.0/8").value(), Cidr::parse("::1/128").value()};
}

namespace {

struct Cli {
  CLI::App app{
      "hourglass: a caching DNS forwarder that serves stale answers when upstream "
      "fails",
      "hourglassd"};
  std::string config_path;
  bool check_config = false;
  std::map<std::string, std::string, std::less<>> scalars;
  std::map<std::string, std::vector<std::string>, std::less<>> lists;
  std::map<std::string, std::string, std::less<>> flags;  ///< "true", or what follows '='
  std::map<std::string, CLI::Option*, std::less<>> options;

  Cli() {
    app.set_version_flag("--version", std::string("hourglass ") + HG_VERSION);
    app.add_option("--config", config_path,
                   "TOML file with the same keys as these flags (without the dashes); flags "
                   "given here override it")
        ->type_name("PATH");
    for (const Key& k : keys()) {
      std::string flag = "--" + std::string(k.name);
      std::string help(k.help);
      CLI::Option* o = nullptr;
      switch (k.kind) {
        case Kind::Scalar:
          o = app.add_option(flag, scalars[std::string(k.name)], help)
                  ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
          break;
        case Kind::List:
          o = app.add_option(flag, lists[std::string(k.name)], help)->allow_extra_args(false);
          break;
        case Kind::Flag:
          o = app.add_flag(flag, flags[std::string(k.name)], help);
          break;
      }
      o->type_name(std::string(k.type_name));
      options[std::string(k.name)] = o;
    }
    app.add_flag("--check-config", check_config,
                 "Check the configuration (flags, file, upstreams, forwarding loop), print it "
                 "and exit");
  }
};

}  // namespace

namespace {

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

template <class T, class F>
std::string toml_list(const std::vector<T>& items, F text) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    out += toml_string(text(items[i]));
  }
  return out + "]";
}

std::string bytes_text(uint64_t b) {
  if (b != 0 && b % (uint64_t{1} << 30) == 0) return std::to_string(b >> 30) + "GiB";
  if (b != 0 && b % (uint64_t{1} << 20) == 0) return std::to_string(b >> 20) + "MiB";
  if (b != 0 && b % (uint64_t{1} << 10) == 0) return std::to_string(b >> 10) + "KiB";
  return std::to_string(b);
}

}  // namespace

std::string to_toml(const Config& c) {
  auto ep_text = [](const Endpoint& e) { return e.to_string(); };
  std::string out;
  out += "listen = " + toml_list(c.listen, ep_text) + "\n";
  if (c.upstreams_from_file) {
    out += "# upstream (from upstream-file) = " + toml_list(c.upstreams, ep_text) + "\n";
  } else {
    out += "upstream = " +
           toml_list(c.upstreams,
                     [&c](const Endpoint& e) {
                       for (const TlsTarget& t : c.tls_upstreams)
                         if (t.endpoint == e) return to_string(t);
                       return e.to_string();
                     }) +
           "\n";
  }
  out += "upstream-file = " + toml_string(c.upstream_file) + "\n";
  out += "cache-size = " + toml_string(bytes_text(c.cache_size)) + "\n";
  out += "cache-min-ttl = " + std::to_string(c.cache_min_ttl.count()) + "\n";
  out += "cache-max-ttl = " + std::to_string(c.cache_max_ttl.count()) + "\n";
  out += "negative-max-ttl = " + std::to_string(c.negative_max_ttl.count()) + "\n";
  out += "stale-max = " + std::to_string(c.stale_max.count()) + "\n";
  out += "stale-ttl = " + std::to_string(c.stale_ttl.count()) + "\n";
  out += "client-timeout = " + std::to_string(c.client_timeout.count()) + "\n";
  out += "upstream-timeout = " + std::to_string(c.upstream_timeout.count()) + "\n";
  out += "allow = " + toml_list(c.allow, [](const Cidr& x) { return x.to_string(); }) + "\n";
  if (!c.private_addresses.empty())
    out += "private-address = " +
           toml_list(c.private_addresses, [](const Cidr& x) { return x.to_string(); }) + "\n";
  if (!c.private_domains.empty())
    out +=
        "private-domain = " + toml_list(c.private_domains, [](const std::string& x) { return x; }) +
        "\n";
  out += "threads = " + std::to_string(c.threads) + "\n";
  out += std::string("log-queries = ") +
         (c.log_queries_json ? "\"json\"" : (c.log_queries ? "true" : "false")) + "\n";
  out += std::string("no-0x20 = ") + (c.use_0x20 ? "false" : "true") + "\n";
  out += std::string("pass-any = ") + (c.minimal_any ? "false" : "true") + "\n";
  if (!c.user.empty()) out += "user = " + toml_string(c.user) + "\n";
  if (c.allow_root) out += "allow-root = true\n";
  if (!c.control_path.empty()) out += "control = " + toml_string(c.control_path) + "\n";
  if (c.metrics) out += "metrics = " + toml_string(c.metrics->to_string()) + "\n";
  out += "tcp-max-per-source = " + std::to_string(c.tcp_max_per_source) + "\n";
  out += "client-share = " + (c.client_share ? std::to_string(c.client_share) : "\"off\"") + "\n";
  out += "failing-zone-cap = " +
         (c.failing_zone_cap ? std::to_string(c.failing_zone_cap) : "\"off\"") + "\n";
  if (c.client_rate) out += "client-rate = " + std::to_string(c.client_rate) + "\n";
  if (!c.metrics_allow.empty())
    out += "metrics-allow = " +
           toml_list(c.metrics_allow, [](const Cidr& x) { return x.to_string(); }) + "\n";
  if (!c.dnstap.empty()) out += "dnstap = " + toml_string(c.dnstap) + "\n";
  if (!c.dnstap_identity.empty())
    out += "dnstap-identity = " + toml_string(c.dnstap_identity) + "\n";
  if (!c.cache_file.empty()) out += "cache-file = " + toml_string(c.cache_file) + "\n";
  if (!c.cache_file.empty()) {
    out += "cache-save-interval = " +
           std::to_string(std::chrono::duration_cast<seconds>(c.cache_save_interval).count()) +
           "\n";
  }
  if (c.redis.enabled()) {
    out += "redis = " + toml_string(c.redis.target) + "\n";
    if (!c.redis.password_file.empty())
      out += "redis-password-file = " + toml_string(c.redis.password_file) + "\n";
    out += "redis-db = " + std::to_string(c.redis.db) + "\n";
    out += "redis-prefix = " + toml_string(c.redis.prefix) + "\n";
    out += "redis-timeout = " + std::to_string(c.redis.timeout.count()) + "\n";
    if (!c.redis.user.empty()) out += "redis-user = " + toml_string(c.redis.user) + "\n";
    if (!c.redis.key_file.empty())
      out += "fleet-key-file = " + toml_string(c.redis.key_file) + "\n";
  }
  out += "ttl-cap = " +
         toml_list(c.ttl_caps,
                   [](const TtlCap& t) { return t.zone + "=" + std::to_string(t.cap.count()); }) +
         "\n";
  if (!c.shadow_ttls.empty()) {
    out += "shadow-ttl = " +
           toml_list(c.shadow_ttls,
                     [](const TtlCap& t) { return t.zone + "=" + std::to_string(t.cap.count()); }) +
           "\n";
  }
  if (c.shadow_size != Config{}.shadow_size)
    out += "shadow-size = " + toml_string(bytes_text(c.shadow_size)) + "\n";
  if (!c.forward_zones.empty()) {
    out += "forward = " +
           toml_list(c.forward_zones,
                     [](const ForwardZone& f) {
                       std::string s = f.zone + "=";
                       for (std::size_t i = 0; i < f.servers.size(); ++i) {
                         std::string text = f.servers[i].to_string();
                         for (const TlsTarget& t : f.tls)
                           if (t.endpoint == f.servers[i]) text = to_string(t);
                         s += (i ? "," : "") + text;
                       }
                       return s;
                     }) +
           "\n";
  }
  if (!c.tls_ca_file.empty()) out += "tls-ca-file = " + toml_string(c.tls_ca_file) + "\n";
  if (!c.tls_pins.empty())
    out += "tls-pin = " + toml_list(c.tls_pins, [](const std::string& p) { return p; }) + "\n";
  if (!c.trust_ad.empty()) out += "trust-ad = " + toml_list(c.trust_ad, ep_text) + "\n";
  if (c.dnssec_given)
    out += std::string("dnssec = ") +
           (c.dnssec == Config::Dnssec::Validate  ? "\"validate\""
            : c.dnssec == Config::Dnssec::Require ? "\"require\""
                                                  : "\"off\"") +
           "\n";
  if (!c.insecure_domains.empty())
    out += "insecure-domain = " +
           toml_list(c.insecure_domains, [](const std::string& x) { return x; }) + "\n";
  out += "trust-anchor = " + toml_string(c.trust_anchor_file) + "\n";
  if (!c.local_records.empty())
    out += "local-record = " + toml_list(c.local_records, [](const std::string& r) { return r; }) +
           "\n";
  if (!c.no_special_zones.empty())
    out += "no-special-zone = " +
           toml_list(c.no_special_zones, [](const std::string& z) { return z; }) + "\n";
  if (c.single_label_forward) out += "single-label = \"forward\"\n";
  if (!c.hosts_files.empty())
    out +=
        "hosts-file = " + toml_list(c.hosts_files, [](const std::string& p) { return p; }) + "\n";
  return out;
}

std::string config_help() {
  Cli cli;
  return render_help(cli.app);
}

std::string config_doc_json(clidoc::Extra extra) {
  Cli cli;
  for (const Key& k : keys())
    extra.toml_keys.emplace_back(k.name);
  return clidoc::to_json(cli.app, extra);
}

std::variant<Config, ConfigExit> parse_config(int argc, const char* const* argv,
                                              const ParseOptions& options) {
  Cli cli;
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::string help = render_help(cli.app);
    while (!help.empty() && help.back() == '\n')
      help.pop_back();
    return ConfigExit{0, help};
  } catch (const CLI::CallForVersion& e) {
    return ConfigExit{0, e.what()};
  } catch (const CLI::ParseError& e) {
    return ConfigExit{2, std::string(e.what()) + "; run with --help for the flags"};
  }

  Config c;
  c.check_config = cli.check_config;
  bool file_upstream = false;
  // --user first: files of that user, read from the config file's keys on, are trusted.
  if (cli.options["user"]->count() > 0) {
    if (auto why = resolve_user(c, cli.scalars["user"]))
      return ConfigExit{2, name_value("", "user", cli.scalars["user"]) + ": " + *why};
  }
  if (!cli.config_path.empty()) {
    c.config_file = cli.config_path;
    if (auto err = apply_toml(c, cli.config_path, options, file_upstream)) {
      return ConfigExit{2, *err};
    }
  } else if (!cli.options.empty() && cli.app.get_option("--config")->count() > 0) {
    return ConfigExit{2, "--config \"\": expected the path of a TOML file"};
  }

  // The command line replaces whatever the file said, list keys included.
  for (const Key& k : keys()) {
    CLI::Option* o = cli.options[std::string(k.name)];
    if (o->count() == 0) continue;
    if (k.kind == Kind::Flag) {
      const std::string& v = cli.flags[std::string(k.name)];
      if (auto allowed = k.set(c, v, options)) {
        return ConfigExit{2, "--" + std::string(k.name) + "=" + quote(v) + ": " + *allowed};
      }
      continue;
    }
    std::vector<std::string> values;
    if (k.kind == Kind::Scalar) {
      values.push_back(cli.scalars[std::string(k.name)]);
    } else {
      values = cli.lists[std::string(k.name)];
    }
    if (k.clear) k.clear(c);
    for (const std::string& v : values) {
      if (auto allowed = k.set(c, v, options)) {
        return ConfigExit{2, name_value("", k.name, v) + ": " + *allowed};
      }
    }
    if (k.name == "shadow-ttl") c.shadow_ttls_from_cli = true;
    if (k.name == "forward") c.forward_from_cli = true;
    if (k.name == "hosts-file") c.hosts_files_from_cli = true;
  }
  c.dnstap_from_cli = cli.options["dnstap"]->count() > 0;
  c.dnstap_identity_from_cli = cli.options["dnstap-identity"]->count() > 0;
  // An explicit --upstream-file beats upstreams from the config file.
  if (cli.options["upstream-file"]->count() > 0 && cli.options["upstream"]->count() == 0 &&
      file_upstream) {
    c.upstreams.clear();
  }

  // Relations between values.
  auto where = [&](std::string_view key, const std::string& value) {
    bool from_cli = cli.options[std::string(key)]->count() > 0;
    if (from_cli || c.config_file.empty()) return "--" + std::string(key) + " " + value;
    return std::string(key) + " = " + value + " (" + c.config_file + ")";
  };
  if (c.cache_min_ttl > c.cache_max_ttl) {
    return ConfigExit{2, where("cache-min-ttl", std::to_string(c.cache_min_ttl.count())) +
                             " is above " +
                             where("cache-max-ttl", std::to_string(c.cache_max_ttl.count())) +
                             ": the minimum TTL must not exceed the maximum"};
  }
  if (c.client_timeout > c.upstream_timeout) {
    return ConfigExit{2, where("client-timeout", std::to_string(c.client_timeout.count())) +
                             " is above " +
                             where("upstream-timeout", std::to_string(c.upstream_timeout.count())) +
                             ": stale data must be served before the SERVFAIL deadline"};
  }
  if (c.listen.empty()) {
    return ConfigExit{2, "listen = []: expected at least one address to serve DNS on"};
  }
  // RFC 8310 §5: a strict server needs an authentication name or a key pin.
  for (const ForwardZone& f : c.forward_zones)
    for (const TlsTarget& t : f.tls)
      if (t.auth_name.empty() && c.tls_pins.empty())
        return ConfigExit{2, "--forward " + f.zone + ": " + to_string(t) +
                                 " has no #AUTH-NAME to check its certificate against; add "
                                 "#NAME (the name in its certificate) or give --tls-pin"};
  for (const TlsTarget& t : c.tls_upstreams)
    if (t.auth_name.empty() && c.tls_pins.empty())
      return ConfigExit{2, "--upstream " + to_string(t) +
                               ": no #AUTH-NAME to check its certificate against; add #NAME "
                               "(the name in its certificate) or give --tls-pin sha256/BASE64"};
  // AD is worth what the path it came over is worth: only a server whose certificate name we
  // check may be trusted with it (RFC 4035 §3.2.3, RFC 6840 §5.7).
  for (const Endpoint& e : c.trust_ad) {
    bool authenticated = false;
    for (const TlsTarget& t : c.tls_upstreams)
      authenticated = authenticated || (t.endpoint == e && !t.auth_name.empty());
    for (const ForwardZone& f : c.forward_zones)
      for (const TlsTarget& t : f.tls)
        authenticated = authenticated || (t.endpoint == e && !t.auth_name.empty());
    if (!authenticated)
      return ConfigExit{2, "--trust-ad " + e.to_string() +
                               ": not a tls:// upstream with a certificate name "
                               "(tls://ADDR#NAME in --upstream or --forward); the AD bit of any "
                               "other upstream can be set by anyone on the path"};
  }
  if (c.dnssec != Config::Dnssec::Off && !c.trust_ad.empty()) {
    if (c.dnssec_given)
      return ConfigExit{2, where("trust-ad", c.trust_ad.front().to_string()) +
                               " with --dnssec validate or require: the AD bit is then this "
                               "resolver's own verdict, not an upstream's; give one or the other"};
    // Trusting an upstream's validation is a choice not to validate here.
    c.dnssec = Config::Dnssec::Off;
  }
  if (!c.redis.user.empty() && c.redis.password.empty()) {
    return ConfigExit{2, where("redis-user", c.redis.user) +
                             ": an ACL user needs its password; give --redis-password-file"};
  }
  if (!c.redis.enabled() && (!c.redis.key_file.empty() || !c.redis.user.empty())) {
    return ConfigExit{2,
                      std::string(c.redis.key_file.empty() ? "--redis-user" : "--fleet-key-file") +
                          " is for the fleet; give --redis ADDR:PORT|unix:PATH too"};
  }

  std::string upstream_source = "--upstream";
  if (c.upstreams.empty()) {
    auto rc = read_resolv_conf(c.upstream_file);
    if (!rc) {
      return ConfigExit{2, "--upstream-file " + quote(c.upstream_file) + ": " + rc.error() +
                               "; give --upstream ADDR[:PORT] or a readable resolv.conf-style "
                               "file with nameserver lines"};
    }
    if (rc->nameservers.empty()) {
      return ConfigExit{2, "--upstream-file " + quote(c.upstream_file) + ": " +
                               no_nameserver_reason(rc.value(), c.upstream_file) +
                               "; give --upstream ADDR[:PORT] or a file with lines like "
                               "\"nameserver 192.0.2.1\""};
    }
    c.upstreams = std::move(rc->nameservers);
    c.upstreams_from_file = true;
    c.warnings.insert(c.warnings.end(), rc->warnings.begin(), rc->warnings.end());
    upstream_source = c.upstream_file;
  } else if (file_upstream && cli.options["upstream"]->count() == 0) {
    upstream_source = c.config_file;
  }

  std::vector<Endpoint> locals =
      options.local_addresses ? *options.local_addresses : local_interface_addresses();
  if (auto loop = find_forwarding_loop(c.listen, c.upstreams, locals)) {
    return ConfigExit{2, describe(*loop, upstream_source)};
  }
  for (const ForwardZone& f : c.forward_zones) {
    if (auto loop = find_forwarding_loop(c.listen, f.servers, locals))
      return ConfigExit{2, describe(*loop, "--forward " + f.zone)};
  }
  return c;
}

Checked<std::pair<std::string, std::string>> reread_dnstap_settings(const Config& running) {
  using R = Checked<std::pair<std::string, std::string>>;
  std::pair<std::string, std::string> out{running.dnstap, running.dnstap_identity};
  if (running.config_file.empty()) return out;
  // Only the two dnstap keys: a bad value elsewhere in the file (a shadow-ttl, say) is
  // reported by the reload of that setting, not as a dnstap problem.
  toml::table tbl;
  bool private_text = false;
  if (auto err = read_toml(running.config_file, tbl, private_text)) return R::failure(*err);
  Config fresh;
  for (const std::string_view name :
       {std::string_view("dnstap"), std::string_view("dnstap-identity")}) {
    const toml::node* n = tbl.get(name);
    if (n == nullptr) continue;
    const Key* key = find_key(name);
    auto values = toml_values(*key, *n, running.config_file);
    if (!values) return R::failure(values.error());
    for (const std::string& v : values.value()) {
      if (auto allowed = key->set(fresh, v, ParseOptions{}))
        return R::failure(name_value(running.config_file, key->name, v) + ": " + *allowed);
    }
  }
  if (!running.dnstap_from_cli) out.first = fresh.dnstap;
  if (!running.dnstap_identity_from_cli) out.second = fresh.dnstap_identity;
  return out;
}

Checked<std::pair<std::vector<ForwardZone>, std::vector<std::string>>> reread_routing_settings(
    const Config& running) {
  using R = Checked<std::pair<std::vector<ForwardZone>, std::vector<std::string>>>;
  std::pair<std::vector<ForwardZone>, std::vector<std::string>> out{running.forward_zones,
                                                                    running.hosts_files};
  if (running.config_file.empty()) return out;
  Config fresh;
  bool file_upstream = false;
  if (auto err = apply_toml(fresh, running.config_file, ParseOptions{}, file_upstream))
    return R::failure(*err);
  if (!running.forward_from_cli) out.first = fresh.forward_zones;
  if (!running.hosts_files_from_cli) out.second = fresh.hosts_files;
  return out;
}

Checked<std::vector<TtlCap>> read_shadow_ttls(const std::string& config_file,
                                              const ParseOptions& options) {
  using R = Checked<std::vector<TtlCap>>;
  toml::table tbl;
  bool private_text = false;
  if (auto err = read_toml(config_file, tbl, private_text)) return R::failure(*err);
  Config c;
  const toml::node* n = tbl.get("shadow-ttl");
  if (n == nullptr) return c.shadow_ttls;
  const Key* key = find_key("shadow-ttl");
  auto values = toml_values(*key, *n, config_file);
  if (!values) return R::failure(values.error());
  for (const std::string& v : values.value()) {
    if (auto allowed = key->set(c, v, options))
      return R::failure(name_value(config_file, key->name, v) + ": " + *allowed);
  }
  return c.shadow_ttls;
}

}  // namespace hg::resolver
