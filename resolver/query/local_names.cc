#include "resolver/query/local_names.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "resolver/query/responder.h"
#include "wire/edns.h"
#include "wire/header.h"
#include "wire/writer.h"

namespace hg::resolver {

using wire::RCode;
using wire::RRType;

namespace {

std::string lowered_wire(const wire::Name& n) {
  const auto w = n.wire();
  std::string out(w.begin(), w.end());
  for (char& c : out)
    c = static_cast<char>(wire::ascii_lower(static_cast<uint8_t>(c)));
  return out;
}

constexpr uint64_t kFnvBasis = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;
// Never 0 (the empty slot).
constexpr uint64_t finish_hash(uint64_t h) noexcept {
  return h == 0 ? 1 : h;
}

// Offsets of each label of a wire name (the root label excluded); the count.
int label_offsets(std::span<const uint8_t> w, std::array<uint8_t, 128>& offs) noexcept {
  int n = 0;
  std::size_t i = 0;
  while (i < w.size() && w[i] != 0 && n < 128) {
    offs[static_cast<std::size_t>(n++)] = static_cast<uint8_t>(i);
    i += 1 + w[i];
  }
  return n;
}

// The special-use and locally served zones, answered here unless a forward zone claims them.
struct SpecialZone {
  const char* name;
  LocalZoneKind kind;
  const char* why;
};

std::vector<SpecialZone> special_zones() {
  std::vector<SpecialZone> z = {
      {"localhost", LocalZoneKind::Localhost, "RFC 6761 §6.3"},
      {"invalid", LocalZoneKind::Nxdomain, "RFC 6761 §6.4"},
      {"onion", LocalZoneKind::Nxdomain, "RFC 7686"},
      {"home.arpa", LocalZoneKind::Empty, "RFC 8375"},
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
  static const std::vector<std::string> names172 = [] {
    std::vector<std::string> v;
    for (int i = 16; i <= 31; ++i)
      v.push_back(fmt::format("{}.172.in-addr.arpa", i));
    return v;
  }();
  for (const auto& n : names172)
    z.push_back({n.c_str(), LocalZoneKind::Empty, "RFC 6303 §4.1"});
  // RFC 6598 shared address space 100.64/10, served locally per RFC 7793.
  static const std::vector<std::string> names100 = [] {
    std::vector<std::string> v;
    for (int i = 64; i <= 127; ++i)
      v.push_back(fmt::format("{}.100.in-addr.arpa", i));
    return v;
  }();
  for (const auto& n : names100)
    z.push_back({n.c_str(), LocalZoneKind::Empty, "RFC 7793"});
  return z;
}

// --- answers -----------------------------------------------------------------------------

/// Builds one answer: header, the client's question, records, then OPT.
class AnswerWriter {
 public:
  AnswerWriter(std::span<uint8_t> out, std::size_t limit, const ClientQuery& q, RCode rcode,
               bool aa)
      : w_(out, limit), q_(q), rcode_(rcode), aa_(aa) {
    const auto opt = response_opt(q.dnssec_ok, rcode, std::nullopt);
    reserve_ = q.has_edns ? wire::opt_size(opt) : 0;
    wire::Header h;
    h.id = q.id;
    h.flags = wire::answer_flags(q.flags, q.dnssec_ok, static_cast<uint16_t>(rcode));
    if (aa) h.flags |= wire::flag::AA;
    h.qdcount = 1;
    uint8_t hb[wire::kHeaderSize];
    h.write_unchecked(hb);
    ok_ = w_.room() >= reserve_ && w_.bytes(hb) && w_.bytes(q.question);
    if (ok_) w_.set_limit(w_.limit() - reserve_);
  }

  /// A record owned by the query name (a pointer to the question).
  bool begin_at_qname(RRType type, uint32_t ttl) {
    mark_ = w_.mark();
    return full_ || (w_.u16(0xC000 | wire::kHeaderSize) && head(type, ttl)) || overflow();
  }
  bool begin_at(const wire::Name& owner, RRType type, uint32_t ttl) {
    mark_ = w_.mark();
    return full_ || (w_.name(owner) && head(type, ttl)) || overflow();
  }
  // RDATA pieces; each returns false (and rolls back the record) when it does not fit.
  bool bytes(std::span<const uint8_t> b) { return full_ || w_.bytes(b) || overflow(); }
  bool name(const wire::Name& n) { return full_ || w_.name(n) || overflow(); }
  bool u32(uint32_t v) { return full_ || w_.u32(v) || overflow(); }
  void end(wire::Section s) {
    if (full_) return;
    w_.patch_u16(rdlen_at_, static_cast<uint16_t>(w_.size() - rdlen_at_ - 2));
    ++counts_[s == wire::Section::Answer ? 0 : 1];
  }

  std::size_t finish() {
    if (!ok_) return 0;
    uint8_t* b = w_.written_mut().data();
    w_.patch_u16(6, counts_[0]);
    w_.patch_u16(8, counts_[1]);
    if (full_) b[2] |= static_cast<uint8_t>(wire::flag::TC >> 8);
    if (q_.has_edns) {
      w_.set_limit(w_.limit() + reserve_);
      if (!wire::write_opt(w_, response_opt(q_.dnssec_ok, rcode_, std::nullopt))) return 0;
      w_.patch_u16(10, 1);
    }
    (void)aa_;
    return w_.size();
  }
  bool ok() const noexcept { return ok_; }

 private:
  bool head(RRType type, uint32_t ttl) {
    if (!w_.u16(static_cast<uint16_t>(type)) || !w_.u16(1) || !w_.u32(ttl)) return false;
    rdlen_at_ = w_.size();
    return w_.u16(0);
  }
  bool overflow() {
    w_.rollback(mark_);
    full_ = true;
    return false;
  }

  wire::WireWriter w_;
  const ClientQuery& q_;
  RCode rcode_;
  bool aa_;
  bool ok_ = false;
  bool full_ = false;
  std::size_t reserve_ = 0;
  std::size_t mark_ = 0;
  std::size_t rdlen_at_ = 0;
  uint16_t counts_[2] = {0, 0};
};

const wire::Name& nobody_invalid() {
  static const wire::Name n = wire::Name::from_text("nobody.invalid").value();
  return n;
}

// RFC 6303 §3: "@ 10800 IN SOA @ nobody.invalid. 1 3600 1200 604800 10800".
void write_soa(AnswerWriter& a, const wire::Name& zone, wire::Section s, bool at_qname) {
  if (at_qname ? !a.begin_at_qname(RRType::SOA, kLocalZoneTtl)
               : !a.begin_at(zone, RRType::SOA, kLocalZoneTtl))
    return;
  if (a.name(zone) && a.name(nobody_invalid()) && a.u32(1) && a.u32(3600) && a.u32(1200) &&
      a.u32(604800) && a.u32(kLocalZoneTtl))
    a.end(s);
}

void write_ns(AnswerWriter& a, const wire::Name& zone) {
  if (a.begin_at_qname(RRType::NS, kLocalZoneTtl) && a.name(zone)) a.end(wire::Section::Answer);
}

void write_a(AnswerWriter& a, std::span<const uint8_t> addr, uint32_t ttl) {
  const RRType t = addr.size() == 4 ? RRType::A : RRType::AAAA;
  if (a.begin_at_qname(t, ttl) && a.bytes(addr)) a.end(wire::Section::Answer);
}

constexpr std::array<uint8_t, 4> kLoopback4 = {127, 0, 0, 1};
constexpr std::array<uint8_t, 16> kLoopback6 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

}  // namespace

wire::Name reverse_name(int family, std::span<const uint8_t> addr) {
  std::string text;
  if (family == AF_INET) {
    text = fmt::format("{}.{}.{}.{}.in-addr.arpa", addr[3], addr[2], addr[1], addr[0]);
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 16; i-- > 0;) {
      text += kHex[addr[i] & 0xF];
      text += '.';
      text += kHex[addr[i] >> 4];
      text += '.';
    }
    text += "ip6.arpa";
  }
  return wire::Name::from_text(text).value();
}

// --- the table ----------------------------------------------------------------------------

std::size_t Routing::SvHash::operator()(std::string_view s) const noexcept {
  return std::hash<std::string_view>{}(s);
}

void Routing::add_tld(std::string_view lowered) {
  std::array<uint8_t, 128> offs;
  const auto* p = reinterpret_cast<const uint8_t*>(lowered.data());
  const int n = label_offsets(std::span<const uint8_t>(p, lowered.size()), offs);
  if (n == 0) return;
  const std::size_t o = offs[static_cast<std::size_t>(n - 1)];
  uint64_t h = kFnvBasis;
  for (std::size_t i = o; i + 1 < lowered.size(); ++i)
    h = (h ^ static_cast<uint8_t>(lowered[i])) * kFnvPrime;
  h = finish_hash(h);
  if (tld_maybe(h)) return;
  if ((tld_count_ + 1) * 4 > tld_hashes_.size()) {  // at most a quarter full
    std::vector<uint64_t> old(tld_hashes_.size() * 2, 0);
    old.swap(tld_hashes_);
    tld_count_ = 0;
    for (const uint64_t x : old) {
      if (x == 0) continue;
      std::size_t i = x & (tld_hashes_.size() - 1);
      while (tld_hashes_[i] != 0)
        i = (i + 1) & (tld_hashes_.size() - 1);
      tld_hashes_[i] = x;
      ++tld_count_;
    }
  }
  std::size_t i = h & (tld_hashes_.size() - 1);
  while (tld_hashes_[i] != 0)
    i = (i + 1) & (tld_hashes_.size() - 1);
  tld_hashes_[i] = h;
  ++tld_count_;
}

bool Routing::tld_maybe(uint64_t h) const noexcept {
  const std::size_t mask = tld_hashes_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    if (tld_hashes_[i] == h) return true;
    if (tld_hashes_[i] == 0) return false;
  }
}

Routing::Host& Routing::host_at(const wire::Name& name) {
  const std::string key = lowered_wire(name);
  auto it = hosts_.find(key);
  if (it != hosts_.end()) return host_data_[it->second];
  hosts_.emplace(key, static_cast<uint32_t>(host_data_.size()));
  add_tld(key);
  return host_data_.emplace_back();
}

Checked<std::shared_ptr<const Routing>> Routing::build(const Input& input) {
  using R = Checked<std::shared_ptr<const Routing>>;
  auto r = std::make_shared<Routing>();
  // Forward zones: one server set per distinct list of servers.
  std::vector<wire::Name> forwarded;
  for (const ForwardZone& fz : input.forward) {
    auto name = wire::Name::from_text(fz.zone);
    if (!name || name->is_root()) return R::failure("--forward " + fz.zone + ": not a zone name");
    if (fz.servers.empty()) return R::failure("--forward " + fz.zone + ": no servers");
    const auto set_it = std::find(r->sets_.begin(), r->sets_.end(), fz.servers);
    const auto set = static_cast<uint32_t>(set_it - r->sets_.begin());
    if (set_it == r->sets_.end()) r->sets_.push_back(fz.servers);
    for (const TlsTarget& t : fz.tls)
      if (std::find(r->tls_.begin(), r->tls_.end(), t) == r->tls_.end()) r->tls_.push_back(t);
    const std::string key = lowered_wire(*name);
    if (r->zone_index_.contains(key))
      return R::failure("--forward " + fz.zone +
                        ": this zone is already forwarded; give each "
                        "zone once");
    Zone z;
    z.name = name->lowercased();
    z.forward = true;
    z.set = set;
    r->zone_index_.emplace(key, static_cast<uint32_t>(r->zones_.size()));
    r->zones_.push_back(z);
    r->add_tld(key);
    r->forward_.push_back({z.name, set, fz.link});
    forwarded.push_back(z.name);
  }
  auto under_forward = [&](const wire::Name& n) {
    return std::any_of(forwarded.begin(), forwarded.end(),
                       [&](const wire::Name& f) { return n.is_subdomain_of(f); });
  };
  if (input.special_use) {
    for (const SpecialZone& s : special_zones()) {
      auto name = wire::Name::from_text(s.name).value();
      if (under_forward(name)) continue;  // the operator claimed it
      Zone z;
      z.name = name;
      z.kind = s.kind;
      z.why = s.why;
      const std::string key = lowered_wire(name);
      r->zone_index_.emplace(key, static_cast<uint32_t>(r->zones_.size()));
      r->zones_.push_back(z);
      r->add_tld(key);
    }
  }
  // Hosts files: names in the order given; a reverse name's PTR is the first canonical name
  // seen for its address (as glibc answers gethostbyaddr from /etc/hosts).
  static const wire::Name localhost = wire::Name::from_text("localhost").value();
  for (const HostsFile& f : input.hosts) {
    for (const HostsLine& l : f.lines) {
      const std::string source = fmt::format("{}:{}", f.path, l.line);
      const std::span<const uint8_t> addr(l.addr.data(), l.family == AF_INET ? 4 : 16);
      std::optional<wire::Name> canonical;
      for (const std::string& nw : l.names) {
        auto name = wire::Name::from_wire(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(nw.data()), nw.size()));
        if (!name) continue;
        if (!canonical) canonical = name.value();
        // localhost and names below it are always the loopback addresses (RFC 6761 §6.3).
        if (input.special_use && name->is_subdomain_of(localhost)) continue;
        Host& h = r->host_at(name.value());
        if (h.source.empty()) h.source = source;
        if (l.family == AF_INET) {
          std::array<uint8_t, 4> a;
          std::copy_n(l.addr.begin(), 4, a.begin());
          if (std::find(h.a.begin(), h.a.end(), a) == h.a.end()) h.a.push_back(a);
        } else if (std::find(h.aaaa.begin(), h.aaaa.end(), l.addr) == h.aaaa.end()) {
          h.aaaa.push_back(l.addr);
        }
      }
      if (!canonical) continue;
      Host& rev = r->host_at(reverse_name(l.family, addr));
      if (rev.source.empty()) rev.source = source;
      if (!rev.ptr) rev.ptr = canonical;
    }
  }
  // --local-record data: at its exact name, beside (and before) the hosts files' data.
  r->records_ = input.records;
  for (const LocalRecord& rec : r->records_) {
    Host& h = r->host_at(rec.name);
    if (h.source.empty()) h.source = "--local-record";
    h.records.push_back(&rec);
  }
  // Built in: 127.0.0.1 and ::1 are localhost (RFC 6761 §6.3), unless forwarded.
  if (input.special_use) {
    const std::array<uint8_t, 16> one6 = kLoopback6;
    for (const wire::Name& rev :
         {reverse_name(AF_INET, kLoopback4), reverse_name(AF_INET6, one6)}) {
      if (under_forward(rev)) continue;
      Host& h = r->host_at(rev);
      if (h.source.empty()) {
        h.source = "built-in (RFC 6761 §6.3)";
        h.ttl = kLocalZoneTtl;
        h.builtin = true;
      }
      if (!h.ptr) h.ptr = localhost;
    }
  }
  return R(std::shared_ptr<const Routing>(std::move(r)));
}

Routing::Match Routing::route(const wire::Name& qname, RRType qtype) const noexcept {
  // Every query comes here, the cache hits too: the fast path finds the last label and
  // hashes it, and nothing more.
  const auto w = qname.wire();
  const std::size_t len = w.size();
  std::size_t last = 0;
  bool single = true;
  for (std::size_t i = 0; i < len && w[i] != 0; i += 1u + w[i]) {
    single = i == 0;
    last = i;
  }
  if (len <= 1) return {};  // the root
  const bool address = qtype == RRType::A || qtype == RRType::AAAA || qtype == RRType::ANY;
  uint64_t h = kFnvBasis;
  for (std::size_t i = last; i + 1 < len; ++i)
    h = (h ^ wire::ascii_lower(w[i])) * kFnvPrime;
  if (!tld_maybe(finish_hash(h))) [[likely]] {
    if (single && address) return {RouteKind::SingleLabel, 0, nullptr};
    return {};
  }
  std::array<uint8_t, 128> offs;
  const int n = label_offsets(w, offs);
  std::array<char, wire::kMaxNameOctets> low;
  for (std::size_t i = 0; i < len; ++i)
    low[i] = static_cast<char>(wire::ascii_lower(w[i]));
  if (auto it = hosts_.find(std::string_view(low.data(), len)); it != hosts_.end())
    return {RouteKind::Hosts, it->second, &host_data_[it->second]};
  for (int i = 0; i < n; ++i) {
    const std::size_t o = offs[static_cast<std::size_t>(i)];
    auto it = zone_index_.find(std::string_view(low.data() + o, len - o));
    if (it == zone_index_.end()) continue;
    const Zone& z = zones_[it->second];
    if (z.forward) return {RouteKind::Forward, z.set, nullptr};
    return {RouteKind::LocalZone, it->second, nullptr};
  }
  if (n == 1 && address) return {RouteKind::SingleLabel, 0, nullptr};
  return {};
}

std::size_t Routing::answer(const Match& m, const ClientQuery& q, std::span<uint8_t> out,
                            std::size_t limit, RCode& rcode) const noexcept {
  const RRType t = q.qtype;
  const bool any = t == RRType::ANY;
  switch (m.kind) {
    case RouteKind::SingleLabel: {
      rcode = RCode::NoError;
      AnswerWriter a(out, limit, q, rcode, false);
      return a.finish();
    }
    case RouteKind::Hosts: {
      const Host& h = host_data_[m.index];
      rcode = RCode::NoError;
      AnswerWriter a(out, limit, q, rcode, true);
      if (t == RRType::A || any)
        for (const auto& x : h.a)
          write_a(a, x, h.ttl);
      if (t == RRType::AAAA || any)
        for (const auto& x : h.aaaa)
          write_a(a, x, h.ttl);
      // A CNAME answers every type (RFC 1034 §3.6.2); its target is not followed here.
      const bool cname = std::any_of(h.records.begin(), h.records.end(),
                                     [](const LocalRecord* x) { return x->type == RRType::CNAME; });
      for (const LocalRecord* x : h.records) {
        if (x->type == t || any || (cname && x->type == RRType::CNAME)) {
          if (a.begin_at_qname(x->type, x->ttl) && a.bytes(x->rdata)) a.end(wire::Section::Answer);
        }
      }
      if (cname && t != RRType::CNAME && !any) {
        // One step: a target that is itself a local name is answered too (as an
        // authoritative server does within its zone), so a stub resolver gets its address.
        for (const LocalRecord* x : h.records) {
          if (x->type != RRType::CNAME) continue;
          auto target = wire::Name::from_wire(x->rdata);
          if (!target) continue;
          auto it = hosts_.find(lowered_wire(*target));
          if (it == hosts_.end()) continue;
          const Host& th = host_data_[it->second];
          auto at_target = [&](RRType type, uint32_t ttl, std::span<const uint8_t> rd) {
            if (a.begin_at(*target, type, ttl) && a.bytes(rd)) a.end(wire::Section::Answer);
          };
          if (t == RRType::A)
            for (const auto& v : th.a)
              at_target(RRType::A, th.ttl, v);
          if (t == RRType::AAAA)
            for (const auto& v : th.aaaa)
              at_target(RRType::AAAA, th.ttl, v);
          for (const LocalRecord* y : th.records)
            if (y->type == t) at_target(y->type, y->ttl, y->rdata);
        }
      }
      if (cname) return a.finish();
      if ((t == RRType::PTR || any) && h.ptr) {
        if (a.begin_at_qname(RRType::PTR, h.ttl) && a.name(*h.ptr)) a.end(wire::Section::Answer);
      }
      return a.finish();
    }
    case RouteKind::LocalZone: {
      const Zone& z = zones_[m.index];
      const bool apex = q.qname != nullptr ? q.qname->size() == z.name.size()
                                           : q.question.size() == z.name.size() + 4;
      if (z.kind == LocalZoneKind::Nxdomain || (z.kind == LocalZoneKind::Empty && !apex)) {
        rcode = RCode::NXDomain;
        AnswerWriter a(out, limit, q, rcode, true);
        write_soa(a, z.name, wire::Section::Authority, false);
        return a.finish();
      }
      rcode = RCode::NoError;
      AnswerWriter a(out, limit, q, rcode, true);
      bool answered = false;
      if (z.kind == LocalZoneKind::Localhost && (t == RRType::A || any)) {
        write_a(a, kLoopback4, kLocalZoneTtl);
        answered = true;
      }
      if (z.kind == LocalZoneKind::Localhost && (t == RRType::AAAA || any)) {
        write_a(a, kLoopback6, kLocalZoneTtl);
        answered = true;
      }
      if (apex && (t == RRType::SOA || any)) {
        write_soa(a, z.name, wire::Section::Answer, true);
        answered = true;
      }
      if (apex && (t == RRType::NS || any)) {
        write_ns(a, z.name);
        answered = true;
      }
      // NODATA: the zone's SOA in the authority section, so it may be cached (RFC 2308).
      if (!answered) write_soa(a, z.name, wire::Section::Authority, false);
      return a.finish();
    }
    case RouteKind::Upstream:
    case RouteKind::Forward:
      break;
  }
  rcode = RCode::ServFail;
  return write_error(out.first(std::min(limit, out.size())), q, RCode::ServFail, std::nullopt);
}

std::string Routing::describe(const wire::Name& qname, std::span<const Endpoint> upstreams) const {
  auto list = [](std::span<const Endpoint> eps) {
    std::string s;
    for (const auto& e : eps)
      s += (s.empty() ? "" : " ") + e.to_string();
    return s.empty() ? std::string("(none)") : s;
  };
  // The rule for names, whatever the type; single-label names say what address types get.
  const Match m = route(qname, RRType::TXT);
  const std::string name = qname.to_text();
  switch (m.kind) {
    case RouteKind::Hosts: {
      const Host& h = host_data_[m.index];
      std::string data;
      auto ip = [](int fam, const uint8_t* p) {
        char buf[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(fam, p, buf, sizeof buf);
        return std::string(buf);
      };
      for (const auto& x : h.a)
        data += " A " + ip(AF_INET, x.data());
      for (const auto& x : h.aaaa)
        data += " AAAA " + ip(AF_INET6, x.data());
      if (h.ptr) data += " PTR " + h.ptr->to_text();
      for (const LocalRecord* x : h.records)
        data += " [" + x->text + "]";
      return fmt::format("{} hosts {} ttl {}:{}; other types NODATA\n", name, h.source, h.ttl,
                         data);
    }
    case RouteKind::LocalZone: {
      // route() found the longest zone; find which (the index is the zone's).
      const Zone& z = zones_[m.index];
      const char* what = z.kind == LocalZoneKind::Localhost ? "A 127.0.0.1, AAAA ::1"
                         : z.kind == LocalZoneKind::Nxdomain
                             ? "NXDOMAIN"
                             : (qname.size() == z.name.size() ? "apex: SOA, NS" : "NXDOMAIN");
      return fmt::format("{} local zone {} ({}): {}\n", name, z.name.to_text(), z.why, what);
    }
    case RouteKind::Forward: {
      // The zone: the longest forward rule the name is under.
      const ForwardRule* best = nullptr;
      for (const auto& f : forward_)
        if (qname.is_subdomain_of(f.zone) && (best == nullptr || f.zone.size() > best->zone.size()))
          best = &f;
      if (best != nullptr && !best->link.empty())
        return fmt::format("{} link {} zone {} servers {}\n", name, best->link,
                           best->zone.to_text(), list(sets_[m.index]));
      return fmt::format("{} forward zone {} servers {}\n", name, best ? best->zone.to_text() : "?",
                         list(sets_[m.index]));
    }
    case RouteKind::SingleLabel:
    case RouteKind::Upstream:
      break;
  }
  if (route(qname, RRType::A).kind == RouteKind::SingleLabel)
    return fmt::format(
        "{} single-label name: A, AAAA and ANY answered NODATA here; other types to the default "
        "upstreams {}\n",
        name, list(upstreams));
  return fmt::format("{} default upstreams {}\n", name, list(upstreams));
}

}  // namespace hg::resolver
