// The table of settings (config_keys.h): one row per setting. To add a setting: a member of
// Config (config.h) with its default, and a row here with the same default; the flag, the
// config-file key, --help, --check-config's TOML, the man pages, the completion and
// docs/configuration.md follow (tests/resolver/config_keys_test.cc checks the defaults agree).
#include "resolver/config_keys.h"

#include <sys/un.h>

#include <algorithm>

#include "resolver/config_writers.h"
#include "resolver/tap/dnstap_writer.h"
#include "resolver/text.h"

namespace hg::resolver::settings {
namespace {

using namespace rows;
using text::parse_digits;
constexpr unsigned kMaxThreads = 256;

using K = Kind;
using G = Group;

}  // namespace

const std::vector<GroupInfo>& groups() {
  static const std::vector<GroupInfo> g = {
      {G::Serving, "Serving", "Where hourglassd answers, and whom.", "architecture.md"},
      {G::Upstreams, "Upstreams", "The servers misses are forwarded to, and how long they get.",
       "upstream.md"},
      {G::Tls, "DNS over TLS", "Certificates and pins of the tls:// upstreams.", "dot.md"},
      {G::Dnssec, "DNSSEC", "Validation of upstream answers.", "dnssec.md"},
      {G::Cache, "Cache", "How much is kept, for how long, and across restarts.", "cache.md"},
      {G::Routing, "Local names and routing",
       "Names answered here, and zones sent to other servers.", "local-names.md"},
      {G::Filtering, "Protection", "Fair shares of the in-flight table and rebinding protection.",
       "security.md"},
      {G::Operations, "Operations", "Control socket, metrics, logs, dnstap and privileges.",
       "packaging.md"},
      {G::Shadow, "Shadow TTLs",
       "Counting what shorter TTLs would cost before setting them (hourglass-ctl shadow).",
       "rehearsal.md"},
      {G::Fleet, "Fleet", "A cache shared with other instances through Redis.", ""},
  };
  return g;
}

const GroupInfo& group_info(Group g) {
  for (const GroupInfo& i : groups())
    if (i.group == g) return i;
  return groups().front();
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      // --- Serving
      {"listen", K::List, G::Serving, "ADDR:PORT", "127.0.0.1:53",
       "Address to serve DNS on, UDP and TCP; [::1]:53 for IPv6, port 0 for one the kernel picks",
       add_listen, clear_list<&Config::listen>, show_whole_list<&Config::listen, endpoint_text>},
      {"allow", K::List, G::Serving, "CIDR", "127.0.0.0/8, ::1/128",
       "Client addresses to serve; others get REFUSED (UDP) or are disconnected at accept (TCP)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto cidr = Cidr::parse(v);
         if (!cidr) return cidr.error();
         c.allow.push_back(cidr.value());
         return std::nullopt;
       },
       clear_list<&Config::allow>, show_whole_list<&Config::allow, cidr_text>},
      {"threads", K::Scalar, G::Serving, "N", "1",
       "Event loops, each on its own SO_REUSEPORT sockets (UDP queries spread by DNS ID), with "
       "one shared cache",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > kMaxThreads) return "expected a whole number from 1 to 256";
         c.threads = static_cast<unsigned>(*n);
         return std::nullopt;
       },
       nullptr, show_number<&Config::threads>},
      {"tcp-max-per-source", K::Scalar, G::Serving, "N", "64",
       "TCP connections one client address (IPv6: one /64) may hold per listener; a new one "
       "beyond closes that source's oldest idle connection",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n < 1 || *n > 256) return "expected a whole number from 1 to 256";
         c.tcp_max_per_source = static_cast<unsigned>(*n);
         return std::nullopt;
       },
       nullptr, show_number<&Config::tcp_max_per_source>},
      // --- Upstreams
      {"upstream", K::List, G::Upstreams, "ADDR[:PORT]", "the nameservers of --upstream-file",
       "Upstream resolver to forward to, port 53 by default; tls://ADDR[:PORT]#NAME for DNS over "
       "TLS, its certificate checked for NAME",
       add_upstream,
       [](Config& c) {
         c.upstreams.clear();
         c.tls_upstreams.clear();
       },
       [](const Config& c, bool) -> Shown {
         if (c.upstreams_from_file) return std::nullopt;  // to_toml writes them as a comment
         return toml_list(c.upstreams, [&c](const Endpoint& e) {
           for (const TlsTarget& t : c.tls_upstreams)
             if (t.endpoint == e) return to_string(t);
           return e.to_string();
         });
       },
       kDescribed},
      {"upstream-file", K::Scalar, G::Upstreams, "PATH", "/etc/resolv.conf",
       "resolv.conf-style file whose nameserver lines are the upstreams when no --upstream is "
       "given, read again whenever it changes",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a resolv.conf-style file";
         c.upstream_file = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text<&Config::upstream_file>, kPath | kReloadFile},
      {"client-timeout", K::Scalar, G::Upstreams, "MS", "1800",
       "Answer from stale data when upstream has not answered after this long",
       set_timeout_of<&Config::client_timeout>, nullptr, show_count<&Config::client_timeout>},
      {"upstream-timeout", K::Scalar, G::Upstreams, "MS", "3000",
       "Answer SERVFAIL when upstream has not answered after this long and nothing stale is "
       "cached",
       set_timeout_of<&Config::upstream_timeout>, nullptr, show_count<&Config::upstream_timeout>},
      {"no-0x20", K::Flag, G::Upstreams, "", "false",
       "Send upstream query names in lower case instead of a random letter case (0x20) "
       "checked in the answer",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         bool lower = false;
         if (auto why = flag_value(v, lower)) return why;
         c.use_0x20 = !lower;
         return std::nullopt;
       },
       nullptr, [](const Config& c, bool) { return show_bool(!c.use_0x20); }},
      {"pass-any", K::Flag, G::Upstreams, "", "false",
       "Forward queries of type ANY upstream instead of answering them here with the minimal "
       "RFC 8482 answer (one HINFO record)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         bool pass = false;
         if (auto why = flag_value(v, pass)) return why;
         c.minimal_any = !pass;
         return std::nullopt;
       },
       nullptr, [](const Config& c, bool) { return show_bool(!c.minimal_any); }},
      // --- DNS over TLS
      {"tls-ca-file", K::Scalar, G::Tls, "PATH", "",
       "PEM CA certificates trusted for tls:// upstreams besides the system store",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a PEM file of CA certificates";
         c.tls_ca_file = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text_if_set<&Config::tls_ca_file>, kPath},
      {"tls-pin", K::List, G::Tls, "sha256/BASE64", "",
       "SPKI pin a tls:// upstream's key must match (any one of them)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto p = parse_tls_pin(v);
         if (!p) return p.error();
         c.tls_pins.emplace_back(v);
         return std::nullopt;
       },
       clear_list<&Config::tls_pins>, show_list<&Config::tls_pins, same>},
      {"trust-ad", K::List, G::Tls, "ADDR[:PORT]", "",
       "Pass on the AD bit of this tls://ADDR#NAME upstream (port 853 by default), whose "
       "certificate name is checked; every other upstream's AD is cleared",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto e = parse_endpoint(v, uint16_t{853});
         if (!e)
           return "expected the address of a tls:// upstream, e.g. 192.0.2.1 or [2001:db8::1]:853";
         c.trust_ad.push_back(*e);
         return std::nullopt;
       },
       clear_list<&Config::trust_ad>, show_list<&Config::trust_ad, endpoint_text>},
      // --- DNSSEC
      {"dnssec", K::Scalar, G::Dnssec, "MODE", "validate",
       "validate: check upstream answers' DNSSEC signatures from the trust anchor down (AD for "
       "the secure, SERVFAIL with the reason for the bogus) when the upstreams deliver DNSSEC "
       "records, else pass answers on without AD and warn once; require: the same, but SERVFAIL "
       "when they do not; off: pass answers on unchecked",
       set_dnssec, nullptr,
       [](const Config& c, bool all) -> Shown {
         if (!all && !c.dnssec_given) return std::nullopt;  // "not given" changes what fails
         return c.dnssec == Config::Dnssec::Validate  ? "\"validate\""
                : c.dnssec == Config::Dnssec::Require ? "\"require\""
                                                      : "\"off\"";
       }},
      {"trust-anchor", K::Scalar, G::Dnssec, "FILE", "/usr/share/dns/root.key",
       "DS or DNSKEY records, one per line, that --dnssec validate starts from; Debian's "
       "dns-root-data ships the default",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a trust anchor file";
         c.trust_anchor_file = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text<&Config::trust_anchor_file>, kPath},
      {"insecure-domain", K::List, G::Dnssec, "ZONE", "",
       "Do not validate names at or below ZONE (a negative trust anchor, RFC 7646): answered "
       "without AD and never bogus",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = zone_syntax_error(v)) return *why;
         c.insecure_domains.emplace_back(v);
         return std::nullopt;
       },
       clear_list<&Config::insecure_domains>, show_list<&Config::insecure_domains, same>},
      // --- Cache
      {"cache-size", K::Scalar, G::Cache, "BYTES", "64MiB",
       "Byte budget of the cache: its entries, their keys and the index", set_cache_size, nullptr,
       [](const Config& c, bool) -> Shown { return toml_string(bytes_text(c.cache_size)); }},
      {"cache-min-ttl", K::Scalar, G::Cache, "SECONDS", "0",
       "Lowest TTL a cached record gets (raised at insert)", set_ttl_of<&Config::cache_min_ttl>,
       nullptr, show_count<&Config::cache_min_ttl>},
      {"cache-max-ttl", K::Scalar, G::Cache, "SECONDS", "604800",
       "Highest TTL a cached record gets (lowered at insert)", set_ttl_of<&Config::cache_max_ttl>,
       nullptr, show_count<&Config::cache_max_ttl>},
      {"negative-max-ttl", K::Scalar, G::Cache, "SECONDS", "3600",
       "Highest TTL of a cached NXDOMAIN or NODATA answer (RFC 2308)",
       set_ttl_of<&Config::negative_max_ttl>, nullptr, show_count<&Config::negative_max_ttl>},
      {"stale-max", K::Scalar, G::Cache, "SECONDS", "86400",
       "How long after expiry an answer may still be served stale (RFC 8767), 0 to disable",
       set_ttl_of<&Config::stale_max>, nullptr, show_count<&Config::stale_max>},
      {"stale-ttl", K::Scalar, G::Cache, "SECONDS", "30", "TTL given to stale answers",
       set_ttl_of<&Config::stale_ttl>, nullptr, show_count<&Config::stale_ttl>},
      {"ttl-cap", K::List, G::Cache, "ZONE=SECONDS", "",
       "Cache records at or below ZONE, and give them to clients, with TTL at most SECONDS; 0: "
       "not cached, given with TTL 0",
       add_ttl_cap, clear_list<&Config::ttl_caps>,
       show_whole_list<&Config::ttl_caps, zone_ttl_text>},
      {"cache-file", K::Scalar, G::Cache, "PATH", "",
       "Save the cache to this file at shutdown and on 'hourglass-ctl save', and load it at "
       "start",
       set_cache_file, nullptr, show_text_if_set<&Config::cache_file>, kPath},
      {"cache-save-interval", K::Scalar, G::Cache, "SECONDS", "5m",
       "With --cache-file, also save the cache this often while running (on a thread of its "
       "own, skipped while nothing changed), so a crash loses at most that much; 0: only at "
       "stop and on 'hourglass-ctl save'",
       set_cache_save_interval, nullptr,
       [](const Config& c, bool all) -> Shown {
         if (!all && c.cache_file.empty()) return std::nullopt;
         return std::to_string(std::chrono::duration_cast<seconds>(c.cache_save_interval).count());
       }},
      // --- Local names and routing (resolver/routing_settings.h, docs/local-names.md)
      {"forward", K::List, G::Routing, "ZONE=ADDR[:PORT][,...]", "",
       "Send names at or below ZONE to these servers instead of the upstreams (split DNS; the "
       "longest matching zone wins)",
       add_forward, clear_list<&Config::forward_zones>,
       show_list<&Config::forward_zones, forward_text>, kReloadKey},
      {"hosts-file", K::List, G::Routing, "PATH", "",
       "Answer the names of this hosts(5) file (A, AAAA, PTR), re-read when it changes",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty()) return "expected the path of a hosts file, e.g. /etc/hosts";
         c.hosts_files.emplace_back(v);
         return std::nullopt;
       },
       clear_list<&Config::hosts_files>, show_list<&Config::hosts_files, same>,
       kPath | kReloadKey},
      {"local-record", K::List, G::Routing, "'NAME TTL TYPE DATA'", "",
       "Answer NAME with this record (A, AAAA, CNAME, PTR, TXT, MX, SRV), never asking upstream",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto r = parse_local_record(v);
         if (!r) return r.error();
         c.local_records.push_back(std::string(v));
         return std::nullopt;
       },
       clear_list<&Config::local_records>, show_list<&Config::local_records, same>},
      {"single-label", K::Scalar, G::Routing, "MODE", "nodata",
       "Single-label names (wpad, printer) asked for an address: nodata: answered NODATA here, "
       "never sent upstream; forward: sent to the default upstreams, e.g. a home router that "
       "knows its hosts' short names",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v == "nodata") {
           c.single_label_forward = false;
         } else if (v == "forward") {
           c.single_label_forward = true;
         } else {
           return "expected nodata or forward";
         }
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool all) -> Shown {
         if (c.single_label_forward) return "\"forward\"";
         return all ? Shown("\"nodata\"") : std::nullopt;
       }},
      {"no-special-zone", K::List, G::Routing, "ZONE", "",
       "Send this built-in special-use zone (test, local, home.arpa, a reverse zone...) to the "
       "upstreams instead of answering it here",
       add_no_special_zone, clear_list<&Config::no_special_zones>,
       show_list<&Config::no_special_zones, same>},
      // --- Protection: fair shares of the in-flight table (resolver/query/inflight.h) and
      // rebinding protection
      {"client-share", K::Scalar, G::Filtering, "FRACTION|N|off", "1/8",
       "In-flight upstream queries one client source (IPv4 /24, IPv6 /56, loopback per "
       "address) may have started, as a fraction of the 4096-entry table (1/8 is 512 entries, "
       "0.125 the same) or a count; its next new name gets SERVFAIL",
       set_client_share, nullptr, show_off_or_number<&Config::client_share>},
      {"failing-zone-cap", K::Scalar, G::Filtering, "N|off", "32",
       "In-flight upstream queries for a zone (the name minus its first label) whose queries "
       "keep timing out; beyond it its new names get SERVFAIL with EDE 22 at once",
       set_failing_zone_cap, nullptr, show_off_or_number<&Config::failing_zone_cap>},
      {"client-rate", K::Scalar, G::Filtering, "N|off", "off",
       "Queries per second one client source may send (burst: one second's worth); UDP "
       "queries beyond are dropped, TCP ones REFUSED",
       set_client_rate, nullptr,
       [](const Config& c, bool all) -> Shown {
         if (!all && c.client_rate == 0) return std::nullopt;
         return show_off_or_number<&Config::client_rate>(c, all);
       }},
      {"private-address", K::List, G::Filtering, "CIDR", "",
       "Leave A/AAAA records in this block out of upstream answers (DNS-rebinding "
       "protection); 'private-ranges' adds loopback, RFC 1918, link-local, ULA, 0.0.0.0/8, "
       "100.64.0.0/10 and IPv4-mapped IPv6",
       add_private_address, clear_list<&Config::private_addresses>,
       show_list<&Config::private_addresses, cidr_text>},
      {"private-domain", K::List, G::Filtering, "ZONE", "",
       "Names at or below ZONE may resolve to --private-address blocks (forward zones, hosts "
       "files and local records always may)",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = zone_syntax_error(v)) return *why;
         c.private_domains.emplace_back(v);
         return std::nullopt;
       },
       clear_list<&Config::private_domains>, show_list<&Config::private_domains, same>},
      // --- Operations
      {"control", K::Scalar, G::Operations, "PATH", "", "Unix socket for hourglass-ctl",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() >= sizeof(sockaddr_un{}.sun_path)) {
           return "expected a filesystem path of 1 to 107 bytes";
         }
         c.control_path = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text_if_set<&Config::control_path>, kPath},
      {"metrics", K::Scalar, G::Operations, "ADDR:PORT", "",
       "Serve Prometheus metrics over HTTP on this address", set_metrics, nullptr,
       [](const Config& c, bool) -> Shown {
         if (!c.metrics) return std::nullopt;
         return toml_string(c.metrics->to_string());
       }},
      {"metrics-allow", K::List, G::Operations, "CIDR", "the --allow list",
       "Addresses that may read --metrics; others are disconnected",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto cidr = Cidr::parse(v);
         if (!cidr) return cidr.error();
         c.metrics_allow.push_back(cidr.value());
         return std::nullopt;
       },
       clear_list<&Config::metrics_allow>, show_list<&Config::metrics_allow, cidr_text>,
       kDescribed},
      {"log-queries", K::Flag, G::Operations, "[=json]", "false",
       "Log every query to stderr, one line each (name, type, rcode, hit/miss/stale, latency); "
       "=json writes JSON lines for log shippers",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v != "true" && v != "false" && v != "text" && v != "json")
           return "expected true or false, \"text\" or \"json\" (on the command line: nothing, "
                  "=text or =json)";
         c.log_queries = v != "false";
         c.log_queries_json = v == "json";
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool) -> Shown {
         return c.log_queries_json ? "\"json\"" : *show_bool(c.log_queries);
       }},
      {"dnstap", K::Scalar, G::Operations, "PATH|unix:PATH", "",
       "Record client and upstream traffic as dnstap: a Frame Streams file (reopened on SIGHUP, "
       "for log rotation), or unix:PATH for a Frame Streams socket",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (auto why = check_dnstap_target(v)) return why;
         c.dnstap = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text_if_set<&Config::dnstap>, kPath | kReloadKey},
      {"dnstap-identity", K::Scalar, G::Operations, "NAME", "the host name",
       "Server name written into every dnstap message",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 255) return "expected a name of 1 to 255 bytes";
         c.dnstap_identity = std::string(v);
         return std::nullopt;
       },
       nullptr, show_text_if_set<&Config::dnstap_identity>, kDescribed | kReloadKey},
      {"user", K::Scalar, G::Operations, "NAME", "stay as started",
       "Started as root: once the sockets are bound and the files that need root are open, "
       "switch to this user (its uid and group, no supplementary groups, no capabilities), "
       "e.g. hourglass, the package's system user",
       [](Config& c, std::string_view v, const ParseOptions&) { return resolve_user(c, v); },
       nullptr, show_text_if_set<&Config::user>, kDescribed},
      {"allow-root", K::Flag, G::Operations, "", "false",
       "Keep running as root when started as root without --user (not recommended: a flaw "
       "in hourglassd would then be a flaw with every privilege)",
       [](Config& c, std::string_view v, const ParseOptions&) {
         return flag_value(v, c.allow_root);
       },
       nullptr,
       [](const Config& c, bool all) -> Shown {
         return all || c.allow_root ? show_bool(c.allow_root) : std::nullopt;
       }},
      // --- Shadow TTLs (cache/shadow.h, docs/rehearsal.md)
      {"shadow-ttl", K::List, G::Shadow, "ZONE=SECONDS", "",
       "Count the upstream queries records at or below ZONE would cause with TTL at most "
       "SECONDS, while answering with the real TTLs",
       add_shadow_ttl, clear_list<&Config::shadow_ttls>,
       show_list<&Config::shadow_ttls, zone_ttl_text>, kReloadKey},
      {"shadow-size", K::Scalar, G::Shadow, "BYTES", "8MiB",
       "Memory limit of the shadow-ttl table, keys and expiry times only", set_shadow_size,
       nullptr,
       [](const Config& c, bool all) -> Shown {
         if (!all && c.shadow_size == Config{}.shadow_size) return std::nullopt;
         return toml_string(bytes_text(c.shadow_size));
       }},
      // --- Fleet: the shared cache (resolver/fleet/fleet_cache.h)
      {"redis", K::Scalar, G::Fleet, "ADDR:PORT|unix:PATH", "",
       "Share the cache and single-flight misses with other instances through this Redis",
       set_redis, nullptr,
       [](const Config& c, bool) -> Shown {
         if (!c.redis.enabled()) return std::nullopt;
         return toml_string(c.redis.target);
       }},
      {"redis-password-file", K::Scalar, G::Fleet, "PATH", "no AUTH",
       "File whose first line is the Redis password, sent with AUTH", set_redis_password, nullptr,
       [](const Config& c, bool all) -> Shown {
         if (c.redis.password_file.empty()) return std::nullopt;
         return if_redis(c, all, toml_string(c.redis.password_file));
       },
       kPath | kDescribed},
      {"redis-db", K::Scalar, G::Fleet, "N", "0", "Redis database number",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto n = parse_digits(v);
         if (!n || *n > 1000000) return "expected a database number from 0 to 1000000";
         c.redis.db = static_cast<unsigned>(*n);
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool all) { return if_redis(c, all, std::to_string(c.redis.db)); }},
      {"redis-prefix", K::Scalar, G::Fleet, "TEXT", "hg:",
       "Prefix of every Redis key and channel; instances with the same prefix form one fleet",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 64 ||
             std::any_of(v.begin(), v.end(), [](char ch) { return ch <= ' ' || ch == 0x7f; }))
           return "expected 1 to 64 printable characters without spaces, e.g. hg:";
         c.redis.prefix = std::string(v);
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool all) { return if_redis(c, all, toml_string(c.redis.prefix)); }},
      {"redis-timeout", K::Scalar, G::Fleet, "MS", "20",
       "Give up on a Redis reply after this long and ask upstream instead",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         auto ms = parse_millis(v);
         if (!ms || ms->count() < 1 || ms->count() > 10000)
           return "expected milliseconds from 1 to 10000, e.g. 20 or 20ms";
         c.redis.timeout = *ms;
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool all) {
         return if_redis(c, all, std::to_string(c.redis.timeout.count()));
       }},
      {"redis-user", K::Scalar, G::Fleet, "NAME", "",
       "Redis 6 ACL user name to AUTH as, with --redis-password-file",
       [](Config& c, std::string_view v, const ParseOptions&) -> std::optional<std::string> {
         if (v.empty() || v.size() > 128 ||
             std::any_of(v.begin(), v.end(), [](char ch) { return ch <= ' ' || ch == 0x7f; }))
           return "expected 1 to 128 printable characters without spaces, e.g. hourglass";
         c.redis.user = std::string(v);
         return std::nullopt;
       },
       nullptr,
       [](const Config& c, bool all) -> Shown {
         if (c.redis.user.empty()) return std::nullopt;
         return if_redis(c, all, toml_string(c.redis.user));
       }},
      {"fleet-key-file", K::Scalar, G::Fleet, "PATH", "Redis is trusted",
       "File whose first line is a secret shared by the fleet (at least 32 bytes, mode 0600): "
       "authenticate every Redis value and fleet message with it",
       set_fleet_key, nullptr,
       [](const Config& c, bool all) -> Shown {
         if (c.redis.key_file.empty()) return std::nullopt;
         return if_redis(c, all, toml_string(c.redis.key_file));
       },
       kPath | kDescribed},
  };
  return k;
}

const Key* find_key(std::string_view name) {
  for (const Key& k : keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace hg::resolver::settings
