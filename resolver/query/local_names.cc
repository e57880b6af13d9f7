#include "resolver/query/local_names.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/hash.h"
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

const wire::Name& ipv4only_arpa() {
  static const wire::Name n = wire::Name::from_text("ipv4only.arpa").value();
  return n;
}

constexpr std::array<uint8_t, 4> kWellKnown170 = {192, 0, 0, 170};
constexpr std::array<uint8_t, 4> kWellKnown171 = {192, 0, 0, 171};
constexpr std::array<uint8_t, 4> kLoopback4 = {127, 0, 0, 1};
constexpr std::array<uint8_t, 16> kLoopback6 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

// The address of a reverse name (lowercased wire form) as reverse_name() writes it:
// d.c.b.a.in-addr.arpa or the 32 nibbles of ip6.arpa. Its length (4 or 16), or 0.
std::size_t reverse_address(std::span<const uint8_t> w, std::array<uint8_t, 16>& out) noexcept {
  static constexpr std::string_view kV4("\7in-addr\4arpa", 13);
  static constexpr std::string_view kV6("\3ip6\4arpa", 9);
  const std::string_view s(reinterpret_cast<const char*>(w.data()), w.size());
  if (s.size() < 2 || s.back() != '\0') return 0;
  const std::string_view body = s.substr(0, s.size() - 1);
  if (body.ends_with(kV4)) {
    std::size_t i = 0;
    for (int k = 3; k >= 0; --k) {
      if (i >= body.size() - kV4.size()) return 0;
      const std::size_t n = static_cast<uint8_t>(body[i]);
      if (n == 0 || n > 3 || i + 1 + n > body.size() - kV4.size()) return 0;
      unsigned v = 0;
      for (std::size_t d = 0; d < n; ++d) {
        const char c = body[i + 1 + d];
        if (c < '0' || c > '9' || (d == 0 && c == '0' && n > 1)) return 0;
        v = v * 10 + static_cast<unsigned>(c - '0');
      }
      if (v > 255) return 0;
      out[static_cast<std::size_t>(k)] = static_cast<uint8_t>(v);
      i += 1 + n;
    }
    return i == body.size() - kV4.size() ? 4 : 0;
  }
  if (body.ends_with(kV6) && body.size() == 64 + kV6.size()) {
    out.fill(0);
    for (std::size_t k = 0; k < 32; ++k) {
      if (body[2 * k] != 1) return 0;
      const char c = body[2 * k + 1];
      const int v = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
      if (v < 0) return 0;
      const std::size_t nib = 31 - k;  // the first label is the last nibble
      out[nib / 2] |= static_cast<uint8_t>(nib % 2 ? v : v << 4);
    }
    return 16;
  }
  return 0;
}

// At or below localhost (a lowercased wire name).
bool under_localhost(std::span<const uint8_t> w) noexcept {
  static constexpr std::string_view kLocalhost("\11localhost", 10);
  std::size_t last = 0;
  for (std::size_t i = 0; i < w.size() && w[i] != 0; i += 1u + w[i])
    last = i;
  const std::string_view s(reinterpret_cast<const char*>(w.data()), w.size());
  return s.size() == last + kLocalhost.size() + 1 &&
         s.substr(last, kLocalhost.size()) == kLocalhost;
}

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
  uint64_t h = base::kFnv1aBasis;
  for (std::size_t i = o; i + 1 < lowered.size(); ++i)
    h = base::fnv1a_step(h, static_cast<uint8_t>(lowered[i]));
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

template <typename Fn>
const HostsTable* Routing::hosts_visit(std::span<const uint8_t> low, Fn&& fn) const noexcept {
  if (tables_.empty()) return nullptr;
  std::array<uint8_t, 16> addr;
  const std::size_t alen = reverse_address(low, addr);
  // localhost and names below it are always the loopback addresses (RFC 6761 §6.3).
  const bool names = !(special_use_ && under_localhost(low));
  const HostsTable* first = nullptr;
  for (const auto& t : tables_) {
    const uint32_t e = names ? t->find(low) : HostsTable::kNone;
    const uint32_t a = alen != 0 ? t->find_address(std::span<const uint8_t>(addr.data(), alen))
                                 : HostsTable::kNone;
    if (e == HostsTable::kNone && a == HostsTable::kNone) continue;
    if (first == nullptr) first = t.get();
    fn(*t, e, a);
  }
  return first;
}

std::size_t Routing::hosts_names() const noexcept {
  std::size_t n = 0;
  for (const auto& t : tables_)
    n += t->names();
  return n;
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
  r->single_label_forward_ = input.single_label_forward;
  auto switched_off = [&](std::string_view zone) {
    return std::find(input.no_special.begin(), input.no_special.end(), special_zone_key(zone)) !=
           input.no_special.end();
  };
  if (input.special_use) {
    for (const SpecialZone& s : special_zones()) {
      auto name = wire::Name::from_text(s.name).value();  // the table's names are valid
      if (under_forward(name)) continue;                  // the operator claimed it
      if (switched_off(s.name)) continue;  // --no-special-zone: the upstreams answer it
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
  // Hosts files: one compact table each (resolver/query/hosts_table.h). A reverse name's PTR
  // is the first canonical name seen for its address (as glibc answers gethostbyaddr from
  // /etc/hosts); names at or below localhost are skipped at lookup (RFC 6761 §6.3).
  for (const HostsFile& f : input.hosts) {
    HostsTable::Builder b(f.path);
    std::vector<uint8_t> wire;
    std::vector<uint32_t> ends;
    for (const HostsLine& l : f.lines) {
      wire.clear();
      ends.clear();
      for (const std::string& nw : l.names) {
        if (!wire::Name::from_wire(
                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(nw.data()), nw.size())))
          continue;
        wire.insert(wire.end(), nw.begin(), nw.end());
        ends.push_back(static_cast<uint32_t>(wire.size()));
      }
      if (ends.empty()) continue;
      HostsLineView v;
      v.family = l.family;
      v.addr = l.addr;
      v.wire = wire;
      v.ends = ends;
      v.line = l.line;
      b.add(v);
    }
    std::vector<std::string> dropped;  // parse_hosts has said what it skipped
    r->tables_.push_back(b.finish(dropped));
  }
  for (const auto& t : input.tables)
    if (t != nullptr) r->tables_.push_back(t);
  // Hosts-file names at or below localhost are skipped while localhost is served here.
  r->special_use_ = input.special_use && !switched_off("localhost");
  for (const auto& t : r->tables_) {
    for (const std::string& l : t->last_labels())
      r->add_tld(l);
    if (t->addresses() > 0) r->add_tld(std::string_view("\4arpa\0", 6));  // arpa. in wire form
  }
  // --local-record data: at its exact name, beside (and before) the hosts files' data.
  r->records_ = input.records;
  for (const LocalRecord& rec : r->records_) {
    Host& h = r->host_at(rec.name);
    if (h.source.empty()) h.source = "--local-record";
    h.records.push_back(&rec);
  }
  // Built in: 127.0.0.1 and ::1 are localhost (RFC 6761 §6.3), unless forwarded.
  static const wire::Name localhost = wire::Name::from_text("localhost").value();
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
  uint64_t h = base::kFnv1aBasis;
  for (std::size_t i = last; i + 1 < len; ++i)
    h = base::fnv1a_step(h, wire::ascii_lower(w[i]));
  if (!tld_maybe(finish_hash(h))) [[likely]] {
    if (single && address && !single_label_forward_) return {RouteKind::SingleLabel, 0, nullptr};
    return {};
  }
  std::array<uint8_t, 128> offs;
  const int n = label_offsets(w, offs);
  std::array<char, wire::kMaxNameOctets> low;
  for (std::size_t i = 0; i < len; ++i)
    low[i] = static_cast<char>(wire::ascii_lower(w[i]));
  {
    const auto it = hosts_.find(std::string_view(low.data(), len));
    const HostsTable* t =
        hosts_visit(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(low.data()), len),
                    [](const HostsTable&, uint32_t, uint32_t) {});
    if (it != hosts_.end() || t != nullptr)
      return {RouteKind::Hosts, it != hosts_.end() ? it->second : kNoHost, t};
  }
  for (int i = 0; i < n; ++i) {
    const std::size_t o = offs[static_cast<std::size_t>(i)];
    auto it = zone_index_.find(std::string_view(low.data() + o, len - o));
    if (it == zone_index_.end()) continue;
    const Zone& z = zones_[it->second];
    if (z.forward) return {RouteKind::Forward, z.set, nullptr};
    return {RouteKind::LocalZone, it->second, nullptr};
  }
  if (n == 1 && address && !single_label_forward_) return {RouteKind::SingleLabel, 0, nullptr};
  return {};
}

template <typename Fn>
void Routing::hosts_addresses(std::span<const uint8_t> low, std::size_t len,
                              Fn&& emit) const noexcept {
  // Each table's addresses of the name, in file order; one another file already gave is
  // not repeated (the first 16 files are compared).
  std::array<std::pair<const HostsTable*, uint32_t>, 16> seen;
  std::size_t n = 0;
  hosts_visit(low, [&](const HostsTable& tb, uint32_t e, uint32_t) {
    if (e == HostsTable::kNone) return;
    for (const uint32_t id : tb.address_ids(e)) {
      const auto bytes = tb.address(id);
      if (bytes.size() != len) continue;
      bool dup = false;
      for (std::size_t k = 0; k < n && !dup; ++k)
        for (const uint32_t id2 : seen[k].first->address_ids(seen[k].second))
          if (std::ranges::equal(seen[k].first->address(id2), bytes)) {
            dup = true;
            break;
          }
      if (!dup) emit(bytes);
    }
    if (n < seen.size()) seen[n++] = {&tb, e};
  });
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
      static const Host kNothing{};
      const Host& h = m.index != kNoHost ? host_data_[m.index] : kNothing;
      rcode = RCode::NoError;
      AnswerWriter a(out, limit, q, rcode, true);
      // The question's name (uncompressed, before QTYPE and QCLASS), lowercased.
      std::array<uint8_t, wire::kMaxNameOctets> low;
      const std::size_t qlen =
          std::min(q.question.size() >= 4 ? q.question.size() - 4 : 0, low.size());
      for (std::size_t i = 0; i < qlen; ++i)
        low[i] = wire::ascii_lower(q.question[i]);
      const std::span<const uint8_t> qlow(low.data(), qlen);
      auto at_qname = [&](std::span<const uint8_t> x) { write_a(a, x, kHostsTtl); };
      if (t == RRType::A || any) hosts_addresses(qlow, 4, at_qname);
      if (t == RRType::AAAA || any) hosts_addresses(qlow, 16, at_qname);
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
          const std::string tlow = lowered_wire(*target);
          const std::span<const uint8_t> tw(reinterpret_cast<const uint8_t*>(tlow.data()),
                                            tlow.size());
          auto at_target = [&](std::span<const uint8_t> v) {
            if (a.begin_at(*target, v.size() == 4 ? RRType::A : RRType::AAAA, kHostsTtl) &&
                a.bytes(v))
              a.end(wire::Section::Answer);
          };
          if (t == RRType::A) hosts_addresses(tw, 4, at_target);
          if (t == RRType::AAAA) hosts_addresses(tw, 16, at_target);
          auto it = hosts_.find(tlow);
          if (it == hosts_.end()) continue;
          for (const LocalRecord* y : host_data_[it->second].records)
            if (y->type == t && a.begin_at(*target, y->type, y->ttl) && a.bytes(y->rdata))
              a.end(wire::Section::Answer);
        }
      }
      if (cname) return a.finish();
      if (t == RRType::PTR || any) {
        // The first hosts file that gives the address, else the built-in loopback name.
        std::optional<wire::Name> ptr;
        uint32_t ttl = h.ttl;
        hosts_visit(qlow, [&](const HostsTable& tb, uint32_t, uint32_t addr) {
          if (ptr || addr == HostsTable::kNone) return;
          ptr = tb.ptr(addr);
          ttl = kHostsTtl;
        });
        if (!ptr) ptr = h.ptr;
        if (ptr && a.begin_at_qname(RRType::PTR, ttl) && a.name(*ptr)) a.end(wire::Section::Answer);
      }
      return a.finish();
    }
    case RouteKind::LocalZone: {
      const Zone& z = zones_[m.index];
      const bool apex = q.qname != nullptr ? q.qname->size() == z.name.size()
                                           : q.question.size() == z.name.size() + 4;
      // Below the apex: NXDOMAIN but in localhost (every name is loopback) and
      // resolver.arpa (RFC 9462 asks NODATA for the whole zone).
      const bool below_exists =
          z.kind == LocalZoneKind::Localhost || z.kind == LocalZoneKind::Nodata;
      if (z.kind == LocalZoneKind::Nxdomain || (!apex && !below_exists)) {
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
      if (z.kind == LocalZoneKind::Ipv4only && (t == RRType::A || any)) {
        write_a(a, kWellKnown170, kIpv4onlyTtl);
        write_a(a, kWellKnown171, kIpv4onlyTtl);
        answered = true;
      }
      if (z.kind == LocalZoneKind::Ipv4onlyPtr && (t == RRType::PTR || any)) {
        if (a.begin_at_qname(RRType::PTR, kIpv4onlyTtl) && a.name(ipv4only_arpa()))
          a.end(wire::Section::Answer);
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
      static const Host kNothing{};
      const Host& h = m.index != kNoHost ? host_data_[m.index] : kNothing;
      std::string data;
      auto ip = [](int fam, const uint8_t* p) {
        char buf[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(fam, p, buf, sizeof buf);
        return std::string(buf);
      };
      const std::string lw = lowered_wire(qname);
      const std::span<const uint8_t> low(reinterpret_cast<const uint8_t*>(lw.data()), lw.size());
      hosts_addresses(low, 4,
                      [&](std::span<const uint8_t> x) { data += " A " + ip(AF_INET, x.data()); });
      hosts_addresses(
          low, 16, [&](std::span<const uint8_t> x) { data += " AAAA " + ip(AF_INET6, x.data()); });
      // The source: the first hosts file's line, else the --local-record or built-in data.
      std::string source = h.source;
      uint32_t ttl = h.ttl;
      std::optional<wire::Name> ptr;
      bool sourced = false;
      hosts_visit(low, [&](const HostsTable& tb, uint32_t e, uint32_t addr) {
        if (!ptr && addr != HostsTable::kNone) ptr = tb.ptr(addr);
        if (sourced) return;
        sourced = true;
        source = fmt::format("{}:{}", tb.path(),
                             e != HostsTable::kNone ? tb.line(e) : tb.address_line(addr));
        ttl = kHostsTtl;
      });
      if (!ptr) ptr = h.ptr;
      if (ptr) data += " PTR " + ptr->to_text();
      for (const LocalRecord* x : h.records)
        data += " [" + x->text + "]";
      return fmt::format("{} hosts {} ttl {}:{}; other types NODATA\n", name, source, ttl, data);
    }
    case RouteKind::LocalZone: {
      // route() found the longest zone; find which (the index is the zone's).
      const Zone& z = zones_[m.index];
      const bool apex = qname.size() == z.name.size();
      const char* what = "NXDOMAIN";
      switch (z.kind) {
        case LocalZoneKind::Localhost:
          what = "A 127.0.0.1, AAAA ::1";
          break;
        case LocalZoneKind::Nxdomain:
          break;
        case LocalZoneKind::Empty:
          if (apex) what = "apex: SOA, NS";
          break;
        case LocalZoneKind::Nodata:
          what = apex ? "apex: SOA, NS; other types NODATA (no designated resolvers)"
                      : "NODATA (no designated resolvers), never forwarded";
          break;
        case LocalZoneKind::Ipv4only:
          if (apex) what = "A 192.0.0.170, 192.0.0.171; AAAA NODATA (no DNS64 here)";
          break;
        case LocalZoneKind::Ipv4onlyPtr:
          if (apex) what = "PTR ipv4only.arpa.";
          break;
      }
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
  if (single_label_forward_ && qname.label_count() == 1)
    return fmt::format("{} single-label name (--single-label forward): default upstreams {}\n",
                       name, list(upstreams));
  return fmt::format("{} default upstreams {}\n", name, list(upstreams));
}

}  // namespace hg::resolver
