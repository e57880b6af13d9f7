// libFuzzer target for dnssec/aggressive.h (RFC 8198): denials learned, then names synthesised,
// in any order, over a small store so that eviction and expiry happen all the time. learn()
// trusts proven_denial() for the signatures but nothing else: the records here are shaped by
// the input, well formed or not, NSEC and NSEC3 chains real or broken.
//
// The input is a sequence of operations (at most 48), each chosen by a byte:
//   even: learn a denial in one of a few zones: an SOA (well formed, or raw bytes), and up to
//         four NSEC or NSEC3 RRsets — owners and next names from a small vocabulary (NSEC3:
//         the real hashes of those names with the input's salt and iterations), type bitmaps
//         from a mask, or raw RDATA; RRSIGs of the input's length; TTLs from the input;
//   odd:  synthesise a name of the vocabulary, a type, at a time moved on by the input, with a
//         HashBudget of the input's size.
// Properties, each an abort when violated:
//  1. The store never holds more than its bounds, nor a zone without records.
//  2. A synthesised response parses strictly; it has the question asked, no answer, and an
//     authority section whose records all carry the TTL it reports, which is not 0.
//  3. Its NSEC or NSEC3 records, handed to the validator's own proofs with the SOA's owner as
//     the zone, prove what its RCODE says (NXDOMAIN, or NODATA for the type asked).
//  4. The HashBudget is never overdrawn.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dnssec/aggressive.h"
#include "dnssec/denial.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using namespace hg;
using namespace hg::dnssec;
using hg::fuzz::check;
using Bytes = std::vector<uint8_t>;

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> in) : in_(in) {}
  uint8_t byte() { return at_ < in_.size() ? in_[at_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>((byte() << 8) | byte()); }
  bool done() const { return at_ >= in_.size(); }
  std::span<const uint8_t> take(std::size_t n) {
    n = std::min(n, in_.size() - at_);
    auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> in_;
  std::size_t at_ = 0;
};

wire::Name name(const char* text) {
  return *wire::Name::from_text(text);
}

const std::vector<wire::Name>& zones() {
  static const std::vector<wire::Name> z = {name("example"), name("sub.example"), name(".")};
  return z;
}

// Names in and around the zones: covers, matches, wildcards, delegations, names outside.
const std::vector<wire::Name>& vocabulary() {
  static const std::vector<wire::Name> names = {
      name("example"),
      name("a.example"),
      name("b.example"),
      name("*.example"),
      name("x.a.example"),
      name("*.a.example"),
      name("m.example"),
      name("z.example"),
      name("sub.example"),
      name("a.sub.example"),
      name("*.sub.example"),
      name("y.x.a.example"),
      name("."),
      name("com"),
      name("*"),
      name("a.com"),
      name("ns.example"),
      name("w.sub.example"),
      name("q.w.sub.example"),
      name("zz.example"),
  };
  return names;
}

const wire::Name& word(Cursor& c) {
  return vocabulary()[c.byte() % vocabulary().size()];
}

constexpr uint16_t kTypes[16] = {1,       kTypeNs, kTypeCname, kTypeSoa, 15, 16, 28, kTypeDname,
                                 kTypeDs, 46,      47,         48,       50, 51, 13, 1234};

Bytes types_of(uint16_t mask) {
  std::vector<uint16_t> types;
  for (int i = 0; i < 16; ++i)
    if ((mask & (1u << i)) != 0) types.push_back(kTypes[i]);
  return encode_type_bitmap(types);
}

Bytes soa_rdata(const wire::Name& apex, uint32_t minimum) {
  Bytes r;
  for (int i = 0; i < 2; ++i)
    r.insert(r.end(), apex.wire().begin(), apex.wire().end());
  for (uint32_t v : {1u, 3600u, 600u, 86400u, minimum})
    for (int shift = 24; shift >= 0; shift -= 8)
      r.push_back(static_cast<uint8_t>(v >> shift));
  return r;
}

std::optional<wire::Name> hashed_owner(const Nsec3Hash& h, const wire::Name& zone) {
  const std::string label = base32hex_encode(h);
  Bytes w{static_cast<uint8_t>(label.size())};
  w.insert(w.end(), label.begin(), label.end());
  w.insert(w.end(), zone.wire().begin(), zone.wire().end());
  auto n = wire::Name::from_wire(w);
  if (!n) return std::nullopt;
  return *n;
}

CheckedRrset rrset(const wire::Name& owner, uint16_t type, Bytes rdata, Cursor& c) {
  const uint32_t ttl = c.u16();
  const auto sig = c.take(c.byte() % 64);
  Rrset s{owner, type, 1, ttl, {std::move(rdata)}, {Bytes(sig.begin(), sig.end())}};
  if ((c.byte() & 7) == 0) s.rdatas.push_back(Bytes{0});  // a second record
  return CheckedRrset{s, c.u16(), 0};
}

void learn(AggressiveCache& store, Cursor& c, int64_t now) {
  const wire::Name& zone = zones()[c.byte() % zones().size()];
  const uint8_t how = c.byte();
  ProvenDenial d;
  d.zone = zone;
  d.nsec3 = (how & 1) != 0;
  d.nxdomain = (how & 2) != 0;
  d.ttl = c.u16();
  if ((how & 4) != 0) {
    const auto raw = c.take(c.byte() % 48);
    d.soa = rrset(zone, kTypeSoa, Bytes(raw.begin(), raw.end()), c);
  } else {
    d.soa = rrset(zone, kTypeSoa, soa_rdata(zone, c.u16()), c);
  }
  const uint16_t iterations = c.byte() % 3;
  const auto salt_bytes = c.take(c.byte() % 3);
  const Bytes salt(salt_bytes.begin(), salt_bytes.end());
  const int n = c.byte() % 5;
  for (int i = 0; i < n; ++i) {
    const uint8_t kind = c.byte();
    const wire::Name& owner_word = word(c);
    const wire::Name& next_word = word(c);
    const uint16_t mask = c.u16();
    Bytes rdata;
    if ((kind & 1) != 0) {  // raw RDATA
      const auto raw = c.take(c.byte() % 64);
      rdata.assign(raw.begin(), raw.end());
    }
    if (!d.nsec3) {
      if ((kind & 1) == 0) {
        rdata.assign(next_word.wire().begin(), next_word.wire().end());
        const Bytes bitmap = types_of(mask);
        rdata.insert(rdata.end(), bitmap.begin(), bitmap.end());
      }
      d.records.push_back(rrset(owner_word, 47, std::move(rdata), c));
      continue;
    }
    const auto owner_hash = nsec3_hash(owner_word, salt, iterations);
    const auto next_hash = nsec3_hash(next_word, salt, iterations);
    if (!owner_hash || !next_hash) continue;
    const auto owner = hashed_owner(*owner_hash, zone);
    if (!owner) continue;
    if ((kind & 1) == 0) {
      // Flags: Opt-Out, or an unknown flag, now and then.
      rdata = {kNsec3Sha1, static_cast<uint8_t>((kind >> 1) & 3),
               static_cast<uint8_t>(iterations >> 8), static_cast<uint8_t>(iterations),
               static_cast<uint8_t>(salt.size())};
      rdata.insert(rdata.end(), salt.begin(), salt.end());
      rdata.push_back(kNsec3HashSize);
      rdata.insert(rdata.end(), next_hash->begin(), next_hash->end());
      const Bytes bitmap = types_of(mask);
      rdata.insert(rdata.end(), bitmap.begin(), bitmap.end());
    }
    d.records.push_back(rrset(*owner, 50, std::move(rdata), c));
  }
  store.learn(d, now);
}

void synthesize(AggressiveCache& store, Cursor& c, int64_t now) {
  const wire::Name& qname = word(c);
  const uint16_t qtype = (c.byte() & 1) != 0 ? c.u16() : kTypes[c.byte() % 16];
  HashBudget hashes(c.u16());
  const auto s = store.synthesize(qname, qtype, 1, now, hashes);
  check(hashes.used() <= hashes.limit(), "hash budget never overdrawn");
  if (!s) return;
  check(s->ttl > 0, "a TTL left");
  wire::Message m;
  check(bool(m.parse(s->response, wire::ParseMode::Strict)), "response parses strictly");
  check(m.rcode() == s->rcode, "rcode as reported");
  check(m.questions().size() == 1 && m.questions()[0].name == qname &&
            static_cast<uint16_t>(m.questions()[0].type) == qtype,
        "the question asked");
  check(m.section(wire::Section::Answer).empty(), "no answer");
  const auto auth = m.section(wire::Section::Authority);
  check(auth.size() >= 3, "SOA, a denial record, RRSIGs");
  std::optional<wire::Name> zone;
  std::vector<NsecRecord> nsec;
  std::vector<Nsec3Record> nsec3;
  for (const auto& rr : auth) {
    check(rr.ttl == s->ttl, "every record with the TTL reported");
    const auto type = static_cast<uint16_t>(rr.type);
    const auto rdata = m.packet().subspan(rr.rdata_offset, rr.rdlength);
    if (type == kTypeSoa) zone = m.owner(rr);
    if (type == 47) nsec.push_back(NsecRecord{m.owner(rr), Bytes(rdata.begin(), rdata.end())});
    if (type == 50) nsec3.push_back(Nsec3Record{m.owner(rr), Bytes(rdata.begin(), rdata.end())});
  }
  check(zone.has_value() && qname.is_subdomain_of(*zone), "the SOA of the name's zone");
  check(nsec.empty() != nsec3.empty(), "NSEC or NSEC3");
  const bool nx = s->rcode == wire::RCode::NXDomain;
  HashBudget again(kDefaultNsec3HashBudget * 4);
  const DenialVerdict v = !nsec.empty()
                              ? (nx ? nsec_prove_nxdomain(nsec, qname, *zone)
                                    : nsec_prove_nodata(nsec, qname, qtype, *zone))
                              : (nx ? nsec3_prove_nxdomain(nsec3, qname, *zone, again)
                                    : nsec3_prove_nodata(nsec3, qname, qtype, *zone, again));
  check(v == DenialVerdict::Proven, "the validator's proof holds for what was synthesised");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Cursor c(std::span<const uint8_t>(data, size));
  AggressiveCache store(AggressiveLimits{.max_records = 12, .max_per_zone = 6});
  int64_t now = 1'000'000;
  for (int op = 0; op < 48 && !c.done(); ++op) {
    const uint8_t what = c.byte();
    now += what >> 4;
    if ((what & 1) == 0) {
      learn(store, c, now);
    } else {
      synthesize(store, c, now);
    }
    check(store.size() <= 12, "bounded overall");
    check(store.zones() <= store.size(), "no zone without records");
  }
  return 0;
}
