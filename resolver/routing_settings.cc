#include "resolver/routing_settings.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "resolver/text.h"
#include "resolver/upstream/resolv_conf.h"

namespace hg::resolver {

using text::shown;
using wire::RRType;

namespace {

constexpr std::size_t kMaxForwardServers = 8;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Names in configuration and hosts files are printable ASCII without spaces.
bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b > 0x20 && b < 0x7F;
  });
}

}  // namespace

Checked<ForwardZone> parse_forward_spec(std::string_view text) {
  using R = Checked<ForwardZone>;
  constexpr std::string_view kAllowed =
      "expected ZONE=ADDR[:PORT][,ADDR[:PORT]...] with numeric addresses (IPv6 as "
      "[ADDR]:PORT), at most 8 servers, e.g. corp.example=10.8.0.1,10.8.0.2:5353";
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return R::failure("no '='; " + std::string(kAllowed));
  const std::string_view zone = trim(text.substr(0, eq));
  if (zone.empty() || zone == ".")
    return R::failure("the root zone cannot be a forward zone: give its servers with --upstream; " +
                      std::string(kAllowed));
  auto name = wire::Name::from_text(zone);
  if (!name || zone.find('\\') != std::string_view::npos || !printable(zone))
    return R::failure("'" + shown(zone) + "' is not a zone name; " + std::string(kAllowed));
  ForwardZone fz;
  fz.zone = std::string(zone);
  std::string_view rest = text.substr(eq + 1);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) return R::failure("an empty server in the list; " + std::string(kAllowed));
    if (is_tls_spec(item)) {  // DNS over TLS (resolver/upstream/dot.h)
      auto t = parse_tls_upstream(item);
      if (!t) return R::failure("'" + shown(item) + "': " + t.error());
      if (std::find(fz.servers.begin(), fz.servers.end(), t->endpoint) == fz.servers.end()) {
        fz.servers.push_back(t->endpoint);
        fz.tls.push_back(t.value());
      }
      if (fz.servers.size() > kMaxForwardServers)
        return R::failure("more than 8 servers; " + std::string(kAllowed));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
      continue;
    }
    auto e = parse_endpoint(item, 53);
    if (!e || e->port() == 0)
      return R::failure("'" + shown(item) + "' is not ADDR[:PORT]; " + std::string(kAllowed));
    if (std::find(fz.servers.begin(), fz.servers.end(), *e) == fz.servers.end())
      fz.servers.push_back(*e);
    if (fz.servers.size() > kMaxForwardServers)
      return R::failure("more than 8 servers; " + std::string(kAllowed));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return fz;
}

Checked<LocalRecord> parse_local_record(std::string_view text) {
  using R = Checked<LocalRecord>;
  constexpr std::string_view kAllowed =
      "expected 'NAME TTL TYPE DATA' with TYPE one of A, AAAA, CNAME, PTR, TXT, MX, SRV, e.g. "
      "'printer.lan 300 A 192.168.1.20' or '_ipp._tcp.lan 300 SRV 0 0 631 printer.lan'";
  auto bad = [&](std::string_view what) {
    return R::failure(std::string(what) + "; " + std::string(kAllowed));
  };
  // Fields; TXT strings may be quoted (with \" and \\ inside).
  std::vector<std::string> f;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    if (i >= text.size()) break;
    std::string field;
    if (text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          field += text[i + 1];
          i += 2;
        } else if (text[i] == '"') {
          ++i;
          closed = true;
          break;
        } else {
          field += text[i++];
        }
      }
      if (!closed) return bad("an unclosed quote");
    } else {
      while (i < text.size() && text[i] != ' ' && text[i] != '\t')
        field += text[i++];
    }
    f.push_back(std::move(field));
    if (f.size() > 64) return bad("too many fields");
  }
  if (f.size() < 4) return bad("too few fields");
  LocalRecord rec;
  rec.text = shown(text);
  auto name = wire::Name::from_text(f[0]);
  if (!name || name->is_root() || !printable(f[0]))
    return bad("'" + shown(f[0]) + "' is not a domain name");
  rec.name = name.value();
  char* end = nullptr;
  const unsigned long ttl = std::strtoul(f[1].c_str(), &end, 10);
  if (f[1].empty() || *end != '\0' || f[1][0] == '-' || ttl > 2147483647UL)
    return bad("'" + shown(f[1]) + "' is not a TTL (0 to 2147483647 seconds)");
  rec.ttl = static_cast<uint32_t>(ttl);
  std::string type = f[2];
  for (char& c : type)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto put_name = [&](const std::string& t) {
    auto n = wire::Name::from_text(t);
    if (!n) return false;
    const auto w = n->wire();
    rec.rdata.insert(rec.rdata.end(), w.begin(), w.end());
    return true;
  };
  auto put_u16 = [&](const std::string& t) {
    char* e = nullptr;
    const unsigned long v = std::strtoul(t.c_str(), &e, 10);
    if (t.empty() || *e != '\0' || t[0] == '-' || v > 65535) return false;
    rec.rdata.push_back(static_cast<uint8_t>(v >> 8));
    rec.rdata.push_back(static_cast<uint8_t>(v));
    return true;
  };
  const std::size_t n = f.size();
  if (type == "A" || type == "AAAA") {
    const bool v4 = type == "A";
    std::array<uint8_t, 16> addr{};
    if (n != 4 || f[3].size() > 64 ||
        ::inet_pton(v4 ? AF_INET : AF_INET6, f[3].c_str(), addr.data()) != 1)
      return bad("'" + shown(f[3]) + "' is not an " + (v4 ? "IPv4" : "IPv6") + " address");
    rec.type = v4 ? RRType::A : RRType::AAAA;
    rec.rdata.assign(addr.begin(), addr.begin() + (v4 ? 4 : 16));
  } else if (type == "CNAME" || type == "PTR") {
    rec.type = type == "CNAME" ? RRType::CNAME : RRType::PTR;
    if (n != 4 || !put_name(f[3])) return bad("'" + shown(f[3]) + "' is not a domain name");
  } else if (type == "TXT") {
    rec.type = RRType::TXT;
    for (std::size_t k = 3; k < n; ++k) {
      if (f[k].size() > 255) return bad("a TXT string longer than 255 bytes");
      rec.rdata.push_back(static_cast<uint8_t>(f[k].size()));
      rec.rdata.insert(rec.rdata.end(), f[k].begin(), f[k].end());
    }
  } else if (type == "MX") {
    rec.type = RRType::MX;
    if (n != 5 || !put_u16(f[3]) || !put_name(f[4])) return bad("MX wants PREFERENCE EXCHANGE");
  } else if (type == "SRV") {
    rec.type = RRType::SRV;
    if (n != 7 || !put_u16(f[3]) || !put_u16(f[4]) || !put_u16(f[5]) || !put_name(f[6]))
      return bad("SRV wants PRIORITY WEIGHT PORT TARGET");
  } else {
    return bad("type '" + shown(f[2]) + "' is not served");
  }
  return rec;
}

void scan_hosts(std::string_view text, const std::function<void(const HostsLineView&)>& on_line,
                const std::function<void(std::string)>& on_error) {
  std::size_t names = 0;
  uint32_t lineno = 0;
  // Reused from line to line: one line's fields and names at a time.
  std::vector<std::string_view> fields;
  std::vector<uint8_t> wire;
  std::vector<uint32_t> ends;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; };
  while (!text.empty()) {
    ++lineno;
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    auto bad = [&](const std::string& why) { on_error(fmt::format("{}: {}", lineno, why)); };
    if (line.size() > kMaxHostsLineBytes) {
      bad(fmt::format("a line of {} bytes (more than {})", line.size(), kMaxHostsLineBytes));
      continue;
    }
    if (const auto hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    fields.clear();
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && space(line[i]))
        ++i;
      const std::size_t start = i;
      while (i < line.size() && !space(line[i]))
        ++i;
      if (i > start) fields.push_back(line.substr(start, i - start));
    }
    if (fields.empty()) continue;
    HostsLineView hl;
    hl.line = lineno;
    // inet_pton reads up to a NUL: an address field with one is not taken as its prefix.
    const bool plain = fields[0].size() < 64 && fields[0].find('\0') == std::string_view::npos;
    const std::string addr(fields[0].substr(0, 64));
    if (plain && ::inet_pton(AF_INET, addr.c_str(), hl.addr.data()) == 1) {
      hl.family = AF_INET;
    } else if (plain && ::inet_pton(AF_INET6, addr.c_str(), hl.addr.data()) == 1) {
      hl.family = AF_INET6;
    } else {
      bad("'" + shown(fields[0]) + "' is not a numeric IPv4 or IPv6 address" +
          (fields[0].find('%') != std::string_view::npos ? " (scoped addresses are not served)"
                                                         : ""));
      continue;
    }
    if (fields.size() < 2) {
      bad("an address with no name");
      continue;
    }
    wire.clear();
    ends.clear();
    bool ok = true;
    for (std::size_t f = 1; f < fields.size(); ++f) {
      const std::string_view n = fields[f];
      auto name = wire::Name::from_text(n);
      if (!name || n == "." || n.find('\\') != std::string_view::npos || n.front() == '.' ||
          !printable(n)) {
        bad("'" + shown(n) + "' is not a host name");
        ok = false;
        break;
      }
      const auto w = name->wire();
      wire.insert(wire.end(), w.begin(), w.end());
      ends.push_back(static_cast<uint32_t>(wire.size()));
    }
    if (!ok) continue;
    names += ends.size();
    if (names > kMaxHostsNames) {
      bad(fmt::format("more than {} names in the file; the rest is ignored", kMaxHostsNames));
      return;
    }
    hl.wire = wire;
    hl.ends = ends;
    on_line(hl);
  }
}

HostsParse parse_hosts(std::string_view text) {
  HostsParse out;
  scan_hosts(
      text,
      [&](const HostsLineView& v) {
        HostsLine hl;
        hl.family = v.family;
        hl.addr = v.addr;
        hl.line = v.line;
        for (std::size_t i = 0; i < v.ends.size(); ++i) {
          const auto n = v.name(i);
          hl.names.emplace_back(n.begin(), n.end());
        }
        out.lines.push_back(std::move(hl));
      },
      [&](std::string e) { out.errors.push_back(std::move(e)); });
  return out;
}

Checked<HostsParse> read_hosts_file(const std::string& path) {
  auto text = read_small_file(path, kMaxHostsFileBytes);
  if (!text) return Checked<HostsParse>::failure(text.error());
  HostsParse parsed = parse_hosts(text.value().text);
  if (text.value().private_text) unquote_private_lines(parsed.errors);
  return parsed;
}

// --- the special-use and locally served zones ---------------------------------------------

const std::vector<SpecialZone>& special_zones() {
  static const std::vector<SpecialZone> all = [] {
    std::vector<SpecialZone> z = {
        {"localhost", LocalZoneKind::Localhost, "RFC 6761 §6.3"},
        {"invalid", LocalZoneKind::Nxdomain, "RFC 6761 §6.4"},
        {"onion", LocalZoneKind::Nxdomain, "RFC 7686"},
        {"home.arpa", LocalZoneKind::Empty, "RFC 8375"},
        // RFC 6761 §6.2: test names "SHOULD" be answered negatively by caching servers.
        {"test", LocalZoneKind::Nxdomain, "RFC 6761 §6.2"},
        // RFC 6762 §22.1: .local is multicast DNS's; unicast DNS has nothing to say about it
        // (a --forward local=... or a runtime link says where mDNS names go instead).
        {"local", LocalZoneKind::Nxdomain, "RFC 6762 §22.1"},
        // RFC 9476: .alt names belong to non-DNS resolution systems, never to the DNS root.
        {"alt", LocalZoneKind::Nxdomain, "RFC 9476"},
        // RFC 9462 §4: a resolver without designated resolvers "SHOULD return NODATA for
        // queries to the resolver.arpa zone" (and never forwards them: an upstream's
        // _dns.resolver.arpa SVCB would name the upstream's encrypted resolvers, not ours).
        {"resolver.arpa", LocalZoneKind::Nodata, "RFC 9462 §4"},
        // RFC 8880 §7: the well-known name of RFC 7050's NAT64 prefix discovery and its two
        // reverse names; without DNS64 here, AAAA is NODATA.
        {"ipv4only.arpa", LocalZoneKind::Ipv4only, "RFC 8880 §7"},
        {"170.0.0.192.in-addr.arpa", LocalZoneKind::Ipv4onlyPtr, "RFC 8880 §7"},
        {"171.0.0.192.in-addr.arpa", LocalZoneKind::Ipv4onlyPtr, "RFC 8880 §7"},
        // RFC 6303 §4.1: RFC 1918 space.
        {"10.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.1"},
        {"168.192.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.1"},
        // RFC 6303 §4.2: RFC 5735 (now 6890) special-use IPv4.
        {"0.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        {"127.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        {"254.169.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        {"2.0.192.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        {"100.51.198.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        {"113.0.203.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.2"},
        // RFC 6303 §4.3: the broadcast address.
        {"255.255.255.255.in-addr.arpa", LocalZoneKind::Empty, "RFC 6303 §4.3"},
        // RFC 6303 §4.4, §4.5: :: and ::1.
        {"0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa",
         LocalZoneKind::Empty, "RFC 6303 §4.4"},
        {"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa",
         LocalZoneKind::Empty, "RFC 6303 §4.5"},
        // RFC 6303 §4.6: unique local addresses fd00::/8.
        {"d.f.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.6"},
        // RFC 6303 §4.7: link-local fe80::/10.
        {"8.e.f.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.7"},
        {"9.e.f.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.7"},
        {"a.e.f.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.7"},
        {"b.e.f.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.7"},
        // RFC 6303 §4.8: the IPv6 documentation prefix 2001:db8::/32.
        {"8.b.d.0.1.0.0.2.ip6.arpa", LocalZoneKind::Empty, "RFC 6303 §4.8"},
    };
    // RFC 6303 §4.1: 172.16/12.
    for (int i = 16; i <= 31; ++i)
      z.push_back({fmt::format("{}.172.in-addr.arpa", i), LocalZoneKind::Empty, "RFC 6303 §4.1"});
    // RFC 6598 shared address space 100.64/10, served locally per RFC 7793.
    for (int i = 64; i <= 127; ++i)
      z.push_back({fmt::format("{}.100.in-addr.arpa", i), LocalZoneKind::Empty, "RFC 7793"});
    return z;
  }();
  return all;
}

std::string special_zone_key(std::string_view zone) {
  std::string s(zone);
  if (!s.empty() && s.back() == '.') s.pop_back();
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_special_zone(std::string_view zone) {
  const std::string key = special_zone_key(zone);
  const auto& all = special_zones();
  return std::any_of(all.begin(), all.end(), [&](const SpecialZone& z) { return key == z.name; });
}

}  // namespace hg::resolver
