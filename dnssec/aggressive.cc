#include "dnssec/aggressive.h"

#include <algorithm>
#include <array>
#include <limits>

#include "base/bytes.h"
#include "wire/header.h"
#include "wire/writer.h"

namespace hg::dnssec {

namespace {

constexpr uint16_t kTypeNsec = 47;
constexpr uint16_t kTypeNsec3 = 50;
constexpr uint16_t kTypeRrsig = 46;
constexpr uint16_t kClassIn = 1;
// The RRSIGs kept per RRset, and the size of one: AnswerValidation hands on only those of the
// key that verified (normally one); an RRSIG of RSA-4096 with a long signer is under 800
// octets. More, or longer, is no honest signature and only costs memory.
constexpr std::size_t kMaxRrsigs = 2;
constexpr std::size_t kMaxRrsigOctets = 1024;

// Where the uncompressed name starting at `at` in `bytes` ends, or nullopt when it runs past
// the end, has a label longer than 63 octets or a compression pointer, or exceeds 255 octets.
std::optional<std::size_t> name_end(std::span<const uint8_t> bytes, std::size_t at) {
  const std::size_t start = at;
  while (at < bytes.size()) {
    const uint8_t len = bytes[at];
    if (len == 0)
      return at + 1 - start <= wire::kMaxNameOctets ? std::optional(at + 1) : std::nullopt;
    if (len > wire::kMaxLabelOctets) return std::nullopt;
    at += 1u + len;
    if (at - start > wire::kMaxNameOctets) return std::nullopt;
  }
  return std::nullopt;
}

// An SOA RDATA as canonical_rdata() gives it (RFC 1035 §3.3.13): two uncompressed names and
// five 32-bit fields, nothing after; its MINIMUM, or nullopt.
std::optional<uint32_t> soa_minimum(std::span<const uint8_t> rdata) {
  const auto mname = name_end(rdata, 0);
  if (!mname) return std::nullopt;
  const auto rname = name_end(rdata, *mname);
  if (!rname || rdata.size() - *rname != 20) return std::nullopt;
  const std::size_t at = rdata.size() - 4;
  return base::load_u32(&rdata[at]);
}

// The owner name of the NSEC3 record for `hash` in `zone` (RFC 5155 §3): its base32hex, then
// the zone. Base32hex keeps the order of the octets it encodes, so NSEC3 owners of one zone
// sort by hash in canonical order too (RFC 5155 §3.1.7).
std::optional<wire::Name> nsec3_owner(const Nsec3Hash& hash, const wire::Name& zone) {
  const std::string label = base32hex_encode(hash);
  const auto tail = zone.wire();
  if (1 + label.size() + tail.size() > wire::kMaxNameOctets) return std::nullopt;
  std::array<uint8_t, wire::kMaxNameOctets> buf{};
  buf[0] = static_cast<uint8_t>(label.size());
  std::copy(label.begin(), label.end(), buf.begin() + 1);
  std::copy(tail.begin(), tail.end(), buf.begin() + 1 + static_cast<std::ptrdiff_t>(label.size()));
  auto n =
      wire::Name::from_wire(std::span<const uint8_t>(buf.data(), 1 + label.size() + tail.size()));
  if (!n) return std::nullopt;
  return *n;
}

bool cuts_below(const TypeBitmap& types) {
  return types.has(kTypeDname) || (types.has(kTypeNs) && !types.has(kTypeSoa));
}

// The RRSIGs of `set` worth keeping, or nullopt when there are none.
std::optional<std::vector<std::vector<uint8_t>>> rrsigs_of(const Rrset& set) {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& sig : set.rrsigs) {
    if (out.size() == kMaxRrsigs) break;
    if (sig.size() >= 18 && sig.size() <= kMaxRrsigOctets) out.push_back(sig);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::size_t AggressiveCache::learn(const ProvenDenial& d, int64_t now) {
  const wire::Name apex = d.zone.lowercased();
  if (d.records.empty() || d.records.size() > 8) return 0;
  // The SOA: the zone's own, one record, well formed, signed.
  const Rrset& soa = d.soa.set;
  if (!(soa.owner == apex) || soa.type != kTypeSoa || soa.klass != kClassIn ||
      soa.rdatas.size() != 1)
    return 0;
  const auto minimum = soa_minimum(soa.rdatas[0]);
  auto soa_sigs = rrsigs_of(soa);
  if (!minimum || !soa_sigs) return 0;
  // The negative TTL (RFC 2308 §5, RFC 9077 §3): no record outlives it.
  const uint32_t base = std::min({d.ttl, d.soa.ttl, soa.ttl, *minimum});
  if (base == 0) return 0;

  struct Kept {
    const Rrset* set;
    std::vector<std::vector<uint8_t>> rrsigs;
    uint32_t ttl;
  };
  std::vector<Kept> kept;
  std::optional<Nsec3> params;
  for (const CheckedRrset& c : d.records) {
    const Rrset& s = c.set;
    if (s.type != (d.nsec3 ? kTypeNsec3 : kTypeNsec) || s.klass != kClassIn ||
        s.rdatas.size() != 1 || !s.owner.is_subdomain_of(apex))
      return 0;
    auto sigs = rrsigs_of(s);
    const uint32_t ttl = std::min({base, c.ttl, s.ttl});
    if (!sigs || ttl == 0) return 0;
    if (!d.nsec3) {
      const auto n = parse_nsec(s.rdatas[0]);
      if (!n || !n->next.is_subdomain_of(apex)) return 0;
    } else {
      const auto n = parse_nsec3(s.rdatas[0]);
      if (!n || !nsec3_owner_hash(s.owner, apex)) return 0;
      // Only what RFC 5155 §8.1 and §8.2 let a validator use, at one set of parameters.
      if (n->hash_algorithm != kNsec3Sha1 || (n->flags & ~kNsec3OptOut) != 0 ||
          n->next_hashed.size() != kNsec3HashSize)
        return 0;
      if (params &&
          (params->iterations != n->iterations || !std::ranges::equal(params->salt, n->salt)))
        return 0;
      params = n;
      // RFC 9276 §3.2; and an Opt-Out range proves nothing NXDOMAIN needs (RFC 8198 §5.2).
      if (n->iterations > limits_.max_iterations || n->opt_out()) continue;
    }
    kept.push_back(Kept{&s, std::move(*sigs), ttl});
  }
  if (kept.empty()) return 0;

  auto [zit, inserted] = zones_.try_emplace(apex);
  Zone& z = zit->second;
  if (inserted) z.apex = apex;
  // A zone that moved from NSEC to NSEC3 or to new NSEC3 parameters has a new chain: the
  // old one's ranges are dropped, not mixed with it.
  const bool same_chain =
      z.nsec3 == d.nsec3 && (!d.nsec3 || (z.iterations == params->iterations &&
                                          std::ranges::equal(z.salt, params->salt)));
  if (!inserted && !same_chain) {
    while (!z.entries.empty())
      erase(z, z.entries.begin());
  }
  z.nsec3 = d.nsec3;
  if (params) {
    z.iterations = params->iterations;
    z.salt.assign(params->salt.begin(), params->salt.end());
  }
  z.soa_rdata = soa.rdatas[0];
  z.soa_rrsigs = std::move(*soa_sigs);
  z.soa_expires = now + base;
  for (Kept& k : kept) {
    if (auto old = z.entries.find(k.set->owner); old != z.entries.end()) erase(z, old);
    const uint64_t seq = next_seq_++;
    auto it = z.entries
                  .emplace(k.set->owner.lowercased(),
                           Entry{k.set->rdatas[0], std::move(k.rrsigs), now + k.ttl, seq})
                  .first;
    z.order.emplace(seq, it);
    order_.emplace(seq, &z);
    ++total_;
  }
  while (z.entries.size() > limits_.max_per_zone)
    evict_oldest(z);
  if (z.entries.empty()) {
    zones_.erase(zit);
    return 0;
  }
  // Oldest first across every zone; `z` may go too, and is not used after this.
  while (total_ > limits_.max_records && !order_.empty()) {
    Zone* oldest = order_.begin()->second;
    evict_oldest(*oldest);
    if (oldest->entries.empty()) {
      const wire::Name gone = oldest->apex;  // not a reference into the node erased
      zones_.erase(gone);
    }
  }
  return kept.size();
}

void AggressiveCache::erase(Zone& z, Entries::iterator it) {
  const uint64_t seq = it->second.seq;
  z.order.erase(seq);
  order_.erase(seq);
  z.entries.erase(it);
  --total_;
}

void AggressiveCache::evict_oldest(Zone& z) {
  if (!z.order.empty()) erase(z, z.order.begin()->second);
}

AggressiveCache::Zone* AggressiveCache::zone_for(const wire::Name& qname) {
  // The deepest zone held that `qname` is in: a name below a child zone is never answered
  // from the parent's records (those show the delegation and stop there).
  const int labels = qname.label_count();
  for (int cut = 0; cut <= labels; ++cut) {
    const auto it = zones_.find(qname.parent(cut));
    if (it != zones_.end()) return &it->second;
  }
  return nullptr;
}

AggressiveCache::Entries::iterator AggressiveCache::at_or_before(Zone& z, const wire::Name& owner,
                                                                 int64_t now) {
  if (z.entries.empty()) return z.entries.end();
  auto it = z.entries.upper_bound(owner);
  it = it == z.entries.begin() ? std::prev(z.entries.end()) : std::prev(it);
  if (it->second.expires <= now) {
    erase(z, it);
    return z.entries.end();
  }
  return it;
}

std::optional<Synthesis> AggressiveCache::synthesize(const wire::Name& qname, uint16_t qtype,
                                                     uint16_t qclass, int64_t now,
                                                     HashBudget& hashes) {
  // Class IN only (DNSSEC's records are IN's); never a meta or question-only type (RFC 6895
  // §3.1: 128 to 255, ANY among them), whose answer no NSEC bitmap speaks for.
  if (qclass != kClassIn || qtype == 0 || (qtype >= 128 && qtype <= 255)) return std::nullopt;
  Zone* z = zone_for(qname);
  if (z == nullptr) return std::nullopt;
  if (z->soa_expires <= now) {
    // Without its SOA the zone answers nothing (RFC 2308 §3): its records go now.
    while (!z->entries.empty())
      erase(*z, z->entries.begin());
  }
  std::optional<Synthesis> out;
  if (!z->entries.empty())
    out = z->nsec3 ? nsec3(*z, qname, qtype, qclass, now, hashes)
                   : nsec(*z, qname, qtype, qclass, now);
  // Expired records met on the way were dropped: a zone left without any goes too, or
  // zones whose records all expired would pile up, SOA and all.
  if (z->entries.empty()) {
    const wire::Name gone = z->apex;
    zones_.erase(gone);
  }
  return out;
}

std::optional<Synthesis> AggressiveCache::nsec(Zone& z, const wire::Name& qname, uint16_t qtype,
                                               uint16_t qclass, int64_t now) {
  const auto cover = at_or_before(z, qname, now);
  if (cover == z.entries.end()) return std::nullopt;
  const auto n = parse_nsec(cover->second.rdata);
  if (!n) return std::nullopt;
  const NsecRecord first{cover->first, cover->second.rdata};
  const Used used_first{&cover->first, kTypeNsec, &cover->second};
  if (cover->first == qname) {
    // NODATA at `qname` (RFC 4035 §3.1.3.1); never at a delegation's parent side, whose
    // NSEC speaks for DS alone and leaves that to the engine's chains (RFC 6840 §4.1).
    if (n->types.has(kTypeNs) && !n->types.has(kTypeSoa)) return std::nullopt;
    if (nsec_prove_nodata(std::span(&first, 1), qname, qtype, z.apex) != DenialVerdict::Proven)
      return std::nullopt;
    return write(z, qname, qtype, qclass, false, std::span(&used_first, 1), now);
  }
  if (!nsec_covers(cover->first, n->next, qname)) return std::nullopt;
  if (n->next.is_subdomain_of(qname)) {
    // An empty non-terminal: it exists, with no types (RFC 4035 §3.1.3.2).
    if (nsec_prove_nodata(std::span(&first, 1), qname, qtype, z.apex) != DenialVerdict::Proven)
      return std::nullopt;
    return write(z, qname, qtype, qclass, false, std::span(&used_first, 1), now);
  }
  const wire::Name ce = nsec_closest_encloser(cover->first, n->next, qname);
  const auto wildcard = wildcard_at(ce);
  if (!wildcard) return std::nullopt;
  const auto w = at_or_before(z, *wildcard, now);
  if (w == z.entries.end()) return std::nullopt;
  const std::array<NsecRecord, 2> records{first, NsecRecord{w->first, w->second.rdata}};
  const std::array<Used, 2> used{used_first, Used{&w->first, kTypeNsec, &w->second}};
  const std::size_t count = w == cover ? 1 : 2;
  if (w->first == *wildcard) {
    // The wildcard exists: no NXDOMAIN; NODATA if it lacks the type (RFC 4035 §3.1.3.4).
    if (nsec_prove_nodata(records, qname, qtype, z.apex) != DenialVerdict::Proven)
      return std::nullopt;
    return write(z, qname, qtype, qclass, false, std::span(used.data(), count), now);
  }
  // The same proof the validator demands (RFC 4035 §5.4): it also refuses a cover whose
  // owner is a delegation or DNAME above `qname`.
  if (nsec_prove_nxdomain(records, qname, z.apex) != DenialVerdict::Proven) return std::nullopt;
  return write(z, qname, qtype, qclass, true, std::span(used.data(), count), now);
}

std::optional<Synthesis> AggressiveCache::nsec3(Zone& z, const wire::Name& qname, uint16_t qtype,
                                                uint16_t qclass, int64_t now, HashBudget& hashes) {
  if (z.iterations > limits_.max_iterations) return std::nullopt;
  auto hash = [&](const wire::Name& name) -> std::optional<Nsec3Hash> {
    if (!hashes.take(std::size_t{z.iterations} + 1)) return std::nullopt;
    return nsec3_hash(name, z.salt, z.iterations);
  };
  auto hash_of_owner = [&](const wire::Name& owner) { return nsec3_owner_hash(owner, z.apex); };
  // The closest encloser (RFC 5155 §8.3): walking up from `qname`, the first name whose hash
  // a record held matches; the name before it on the way is the next closer name.
  const int below = qname.label_count() - z.apex.label_count();
  std::optional<Nsec3Hash> next_closer;
  Entries::iterator ce = z.entries.end();
  int ce_cut = 0;
  for (int cut = 0; cut <= below; ++cut) {
    const auto h = hash(qname.parent(cut));
    if (!h) return std::nullopt;
    const auto owner = nsec3_owner(*h, z.apex);
    if (!owner) return std::nullopt;
    if (auto it = z.entries.find(*owner); it != z.entries.end()) {
      if (it->second.expires > now) {
        ce = it;
        ce_cut = cut;
        break;
      }
      erase(z, it);
    }
    next_closer = h;
  }
  if (ce == z.entries.end()) return std::nullopt;
  const auto ce_rr = parse_nsec3(ce->second.rdata);
  if (!ce_rr) return std::nullopt;
  std::vector<Nsec3Record> records{Nsec3Record{ce->first, ce->second.rdata}};
  std::vector<Used> used{Used{&ce->first, kTypeNsec3, &ce->second}};
  if (ce_cut == 0) {
    // NODATA at `qname` (RFC 5155 §8.5), never at a delegation's parent side (RFC 6840 §4.1).
    if (ce_rr->types.has(kTypeNs) && !ce_rr->types.has(kTypeSoa)) return std::nullopt;
    if (nsec3_prove_nodata(records, qname, qtype, z.apex, hashes, limits_.max_iterations) !=
        DenialVerdict::Proven)
      return std::nullopt;
    return write(z, qname, qtype, qclass, false, used, now);
  }
  if (cuts_below(ce_rr->types) || !next_closer) return std::nullopt;
  // The next closer name is covered...
  const auto nc_owner = nsec3_owner(*next_closer, z.apex);
  if (!nc_owner) return std::nullopt;
  const auto nc = at_or_before(z, *nc_owner, now);
  if (nc == z.entries.end()) return std::nullopt;
  const auto nc_rr = parse_nsec3(nc->second.rdata);
  const auto nc_hash = hash_of_owner(nc->first);
  if (!nc_rr || !nc_hash || !nsec3_covers(*nc_hash, nc_rr->next_hashed, *next_closer))
    return std::nullopt;
  auto add = [&](Entries::iterator it) {
    for (const Used& u : used)
      if (u.entry == &it->second) return;
    records.push_back(Nsec3Record{it->first, it->second.rdata});
    used.push_back(Used{&it->first, kTypeNsec3, &it->second});
  };
  add(nc);
  // ...and so is the wildcard at the closest encloser (RFC 5155 §8.4), or it exists and lacks
  // the type: a wildcard NODATA (§8.7).
  const auto wildcard = wildcard_at(qname.parent(ce_cut));
  if (!wildcard) return std::nullopt;
  const auto wh = hash(*wildcard);
  if (!wh) return std::nullopt;
  const auto w_owner = nsec3_owner(*wh, z.apex);
  if (!w_owner) return std::nullopt;
  const auto w = at_or_before(z, *w_owner, now);
  if (w == z.entries.end()) return std::nullopt;
  add(w);
  // The same proofs the validator demands, over just these records.
  const bool nxdomain = !(w->first == *w_owner);
  const DenialVerdict v =
      nxdomain ? nsec3_prove_nxdomain(records, qname, z.apex, hashes, limits_.max_iterations)
               : nsec3_prove_nodata(records, qname, qtype, z.apex, hashes, limits_.max_iterations);
  if (v != DenialVerdict::Proven) return std::nullopt;
  return write(z, qname, qtype, qclass, nxdomain, used, now);
}

std::optional<Synthesis> AggressiveCache::write(const Zone& z, const wire::Name& qname,
                                                uint16_t qtype, uint16_t qclass, bool nxdomain,
                                                std::span<const Used> used, int64_t now) const {
  // Every record gets what is left of the shortest-lived one, the SOA's included (RFC 8198
  // §5.4: never longer than the denial's own TTL).
  int64_t left = z.soa_expires - now;
  std::size_t size = wire::kHeaderSize + qname.size() + 4;
  auto add_size = [&](const wire::Name& owner, std::span<const uint8_t> rdata) {
    size += owner.size() + 10 + rdata.size();
  };
  add_size(z.apex, z.soa_rdata);
  for (const auto& sig : z.soa_rrsigs)
    add_size(z.apex, sig);
  for (const Used& u : used) {
    left = std::min(left, u.entry->expires - now);
    add_size(*u.owner, u.entry->rdata);
    for (const auto& sig : u.entry->rrsigs)
      add_size(*u.owner, sig);
  }
  if (left <= 0) return std::nullopt;
  const auto ttl =
      static_cast<uint32_t>(std::min<int64_t>(left, std::numeric_limits<int32_t>::max()));
  Synthesis out;
  out.rcode = nxdomain ? wire::RCode::NXDomain : wire::RCode::NoError;
  out.ttl = ttl;
  out.response.resize(size);
  wire::WireWriter w(out.response);
  std::size_t records = 0;
  bool ok = true;
  auto record = [&](const wire::Name& owner, uint16_t type, std::span<const uint8_t> rdata) {
    ok = ok && w.name(owner) && w.u16(type) && w.u16(kClassIn) && w.u32(ttl) &&
         w.u16(static_cast<uint16_t>(rdata.size())) && w.bytes(rdata);
    ++records;
  };
  const uint16_t flags =
      wire::flag::QR | wire::flag::RA | wire::flag::AD | static_cast<uint16_t>(out.rcode);
  ok = w.u16(0) && w.u16(flags) && w.u16(1) && w.u16(0) && w.u16(0) && w.u16(0) && w.name(qname) &&
       w.u16(qtype) && w.u16(qclass);
  record(z.apex, kTypeSoa, z.soa_rdata);
  for (const auto& sig : z.soa_rrsigs)
    record(z.apex, kTypeRrsig, sig);
  for (const Used& u : used) {
    record(*u.owner, u.type, u.entry->rdata);
    for (const auto& sig : u.entry->rrsigs)
      record(*u.owner, kTypeRrsig, sig);
  }
  if (!ok || records > 0xffff) return std::nullopt;
  w.patch_u16(8, static_cast<uint16_t>(records));  // NSCOUNT
  out.response.resize(w.size());
  return out;
}

}  // namespace hg::dnssec
