// libFuzzer target for dnssec/denial.h: the NSEC, NSEC3 and NSEC3PARAM RDATA parsers, base32hex,
// the NSEC3 hash, and the proofs over record sets the input describes. The records a validator
// hands to the proofs come from any zone that signs them: their contents are untrusted.
//
// The first input byte picks what the rest is:
//   0: a type bitmap, then an NSEC RDATA (the same bytes);
//   1: an NSEC3 RDATA;  2: an NSEC3PARAM RDATA;  3: base32hex text;
//   4: an NSEC3 hash: iterations, salt length, salt, then a name's wire form;
//   5: NSEC records and a question, from a small set of names in and around example.;
//   6: NSEC3 records and a question likewise, with the iterations, the limit and the budget.
// Properties, each an abort when violated:
//  1. A bitmap that parses re-encodes to the same bytes, and has() is true exactly for the
//     types it lists.
//  2. No interval covers its own owner (NSEC or NSEC3), nor an NSEC its next name.
//  3. base32hex decodes what it encodes, and encodes what it decodes (in lowercase).
//  4. An NSEC3 hash is 20 octets (32 base32hex characters), ignores case, and the owner
//     label made of it decodes back to it.
//  5. NSEC proofs say only Proven or NotProven, the same twice, and NotProven with no records.
//  6. NSEC3 proofs never take more than their budget; BudgetExhausted only when what is left
//     is less than one more name would cost; IterationsTooHigh only with a record over the
//     limit; a closest encloser is a proper ancestor of the name, one label above the next
//     closer name.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dnssec/denial.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/name.h"

namespace {

using namespace hg;
using namespace hg::dnssec;

using hg::fuzz::check;

// Reads the input byte by byte; zeros once it runs out.
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

// Names in and around the zone example., chosen by index: enough for covers, matches,
// wildcards, empty non-terminals and names outside the zone to meet.
const std::vector<wire::Name>& vocabulary() {
  static const std::vector<wire::Name> names = {
      name("example"),     name("a.example"),     name("b.example"),   name("*.example"),
      name("x.a.example"), name("*.a.example"),   name("c.b.example"), name("y.x.a.example"),
      name("ns.example"),  name("*.x.a.example"), name("z.example"),   name("a.z.example"),
      name("."),           name("example.org"),   name("xx.example"),  name("a.xx.example"),
  };
  return names;
}

const wire::Name& word(Cursor& c) {
  return vocabulary()[c.byte() % vocabulary().size()];
}

// The types the proofs look at, and a few others.
constexpr uint16_t kTypes[16] = {1,       kTypeNs, kTypeCname, kTypeSoa, 15, 16, 28, kTypeDname,
                                 kTypeDs, 46,      47,         48,       50, 51, 13, 1234};

// A type bitmap of the types a 16-bit mask picks.
std::vector<uint8_t> types_of(uint16_t mask) {
  std::vector<uint16_t> types;
  for (int i = 0; i < 16; ++i)
    if ((mask & (1u << i)) != 0) types.push_back(kTypes[i]);
  return encode_type_bitmap(types);
}

void check_bitmap(const TypeBitmap& t, Cursor& probes) {
  const auto types = t.types();
  const auto again = encode_type_bitmap(types);
  check(again.size() == t.wire().size() && std::equal(again.begin(), again.end(), t.wire().begin()),
        "bitmap re-encodes to its bytes");
  for (const uint16_t type : types)
    check(t.has(type), "has() every listed type");
  for (int i = 0; i < 8 && !probes.done(); ++i) {
    const uint16_t type = probes.u16();
    const bool listed = std::find(types.begin(), types.end(), type) != types.end();
    check(t.has(type) == listed, "has() only listed types");
  }
}

bool valid(DenialVerdict v) {
  switch (v) {
    case DenialVerdict::Proven:
    case DenialVerdict::ProvenInsecure:
    case DenialVerdict::NotProven:
    case DenialVerdict::IterationsTooHigh:
    case DenialVerdict::BudgetExhausted:
      return true;
  }
  return false;
}

void fuzz_nsec_proofs(Cursor& c) {
  const wire::Name zone = c.byte() % 8 == 0 ? name(".") : name("example");
  std::vector<NsecRecord> records;
  const int n = c.byte() % 8;
  for (int i = 0; i < n; ++i) {
    const uint8_t how = c.byte();
    NsecRecord r{word(c), {}};
    if ((how & 1) != 0) {  // raw RDATA, for the parser inside the proofs
      const auto raw = c.take(c.byte() % 64);
      r.rdata.assign(raw.begin(), raw.end());
    } else {
      const wire::Name& next = word(c);
      r.rdata.assign(next.wire().begin(), next.wire().end());
      const auto bitmap = types_of(c.u16());
      r.rdata.insert(r.rdata.end(), bitmap.begin(), bitmap.end());
    }
    records.push_back(r);
  }
  const wire::Name& qname = word(c);
  const uint16_t qtype = kTypes[c.byte() % 16];
  const int labels = c.byte() % 5;
  for (const auto& r : records) {
    if (auto p = parse_nsec(r.rdata)) {
      check(!nsec_covers(r.owner, p->next, r.owner), "an NSEC does not cover its owner");
      check(!nsec_covers(r.owner, p->next, p->next), "an NSEC does not cover its next name");
      check(nsec_matches(r.owner, r.owner), "an NSEC matches its owner");
    }
  }
  const DenialVerdict v[4] = {
      nsec_prove_nxdomain(records, qname, zone),
      nsec_prove_nodata(records, qname, qtype, zone),
      nsec_prove_wildcard_answer(records, qname, labels, zone),
      nsec_prove_insecure_delegation(records, qname, zone),
  };
  for (const DenialVerdict x : v)
    check(x == DenialVerdict::Proven || x == DenialVerdict::NotProven,
          "an NSEC proof is Proven or NotProven");
  check(v[0] == nsec_prove_nxdomain(records, qname, zone), "the same proof twice");
  check(v[1] == nsec_prove_nodata(records, qname, qtype, zone), "the same proof twice");
  if (records.empty())
    for (const DenialVerdict x : v)
      check(x == DenialVerdict::NotProven, "no records prove nothing");
}

void fuzz_nsec3_proofs(Cursor& c) {
  const wire::Name zone = name("example");
  static const uint16_t kIterations[4] = {0, 1, 3, 151};
  const uint16_t iterations = kIterations[c.byte() % 4];
  const uint16_t max_iterations = c.byte() % 2 == 0 ? kDefaultMaxNsec3Iterations : 2;
  const std::vector<uint8_t> salt{0xaa, 0xbb};
  std::vector<Nsec3Record> records;
  bool over_limit = false;
  const int n = c.byte() % 8;
  // A hash: of a name of the vocabulary with this chain's parameters, or raw from the input.
  auto hash_of = [&](uint8_t how) {
    Nsec3Hash h{};
    if ((how & 1) != 0) {
      const auto raw = c.take(h.size());
      std::copy(raw.begin(), raw.end(), h.begin());
    } else {
      h = *nsec3_hash(word(c), salt, iterations);
    }
    return h;
  };
  for (int i = 0; i < n; ++i) {
    const uint8_t how = c.byte();
    const Nsec3Hash owner = hash_of(how);
    const Nsec3Hash next = hash_of(static_cast<uint8_t>(how >> 1));
    const uint8_t algorithm = (how & 4) != 0 ? 2 : kNsec3Sha1;
    const uint8_t flags = (how & 8) != 0 ? kNsec3OptOut : 0;
    const std::string label = base32hex_encode(owner);
    Nsec3Record r{(how & 16) != 0 ? name((label + ".example.org").c_str())
                                  : name((label + ".example").c_str()),
                  {}};
    // Byte by byte: g++ 12 at -O3 warns falsely (array-bounds) on inserting into a vector
    // made from an initializer list.
    const auto bitmap = types_of(c.u16());
    r.rdata.reserve(6 + salt.size() + next.size() + bitmap.size());
    for (const uint8_t b : {algorithm, flags, static_cast<uint8_t>(iterations >> 8),
                            static_cast<uint8_t>(iterations), static_cast<uint8_t>(salt.size())})
      r.rdata.push_back(b);
    r.rdata.insert(r.rdata.end(), salt.begin(), salt.end());
    r.rdata.push_back(static_cast<uint8_t>(next.size()));
    r.rdata.insert(r.rdata.end(), next.begin(), next.end());
    r.rdata.insert(r.rdata.end(), bitmap.begin(), bitmap.end());
    check(!nsec3_covers(owner, next, owner), "an NSEC3 does not cover its owner");
    if (iterations > max_iterations) over_limit = true;
    records.push_back(r);
  }
  const wire::Name& qname = word(c);
  const uint16_t qtype = kTypes[c.byte() % 16];
  const int labels = c.byte() % 5;
  // Mostly small, so that running out is explored too.
  const uint16_t limit = c.u16();
  HashBudget budget((limit & 0x8000) != 0 ? 100000 : limit % 64);
  auto bounded = [&](DenialVerdict v) {
    check(valid(v), "a verdict of the enum");
    check(budget.used() <= budget.limit(), "the budget is never exceeded");
    if (v == DenialVerdict::BudgetExhausted)
      check(budget.limit() - budget.used() <= max_iterations, "exhausted only when spent");
    if (v == DenialVerdict::IterationsTooHigh) check(over_limit, "too high only over the limit");
  };
  const ClosestEncloser ce = nsec3_closest_encloser(records, qname, zone, budget, max_iterations);
  bounded(ce.verdict);
  if (ce.verdict == DenialVerdict::Proven || ce.verdict == DenialVerdict::ProvenInsecure) {
    check(qname.is_subdomain_of(ce.next_closer) && ce.next_closer.is_subdomain_of(ce.closest) &&
              ce.next_closer.label_count() == ce.closest.label_count() + 1 &&
              ce.closest.is_subdomain_of(zone),
          "closest encloser above the next closer, above the name");
  }
  bounded(nsec3_prove_nxdomain(records, qname, zone, budget, max_iterations));
  bounded(nsec3_prove_nodata(records, qname, qtype, zone, budget, max_iterations));
  bounded(nsec3_prove_wildcard_answer(records, qname, labels, zone, budget, max_iterations));
  bounded(nsec3_prove_insecure_delegation(records, qname, zone, budget, max_iterations));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0] % 7) {
    case 0: {
      Cursor probes(in);
      if (auto t = TypeBitmap::parse(in)) check_bitmap(*t, probes);
      if (auto p = parse_nsec(in)) {
        Cursor more(in);
        check_bitmap(p->types, more);
        check(p->next.size() <= wire::kMaxNameOctets, "next name length");
      }
      break;
    }
    case 1: {
      auto p = parse_nsec3(in);
      if (!p) break;
      Cursor probes(in);
      check_bitmap(p->types, probes);
      check(!p->next_hashed.empty() && p->salt.size() + p->next_hashed.size() + 6 <= in.size(),
            "NSEC3 fields inside the RDATA");
      const auto back = base32hex_decode(base32hex_encode(p->next_hashed));
      check(back && back->size() == p->next_hashed.size() &&
                std::equal(back->begin(), back->end(), p->next_hashed.begin()),
            "base32hex round trip of the next hash");
      // Whatever the next hash (the salt stands in for one), no interval holds its owner.
      check(!nsec3_covers(p->next_hashed, p->salt, p->next_hashed),
            "an NSEC3 does not cover its owner");
      break;
    }
    case 2: {
      auto p = parse_nsec3param(in);
      if (p) check(in.size() == 5 + p->salt.size(), "NSEC3PARAM is its fields and no more");
      break;
    }
    case 3: {
      const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
      if (auto bytes = base32hex_decode(text)) {
        std::string lower(text);
        for (char& ch : lower)
          ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        check(base32hex_encode(*bytes) == lower, "base32hex encodes what it decoded");
      }
      const auto back = base32hex_decode(base32hex_encode(in));
      check(back && back->size() == in.size() && std::equal(back->begin(), back->end(), in.begin()),
            "base32hex decodes what it encoded");
      break;
    }
    case 4: {
      Cursor c(in);
      const uint16_t iterations = c.byte() % 16;
      const auto salt = c.take(c.byte() % 32);
      const auto rest = c.take(in.size());
      auto n = wire::Name::from_wire(rest);
      if (!n) break;
      const auto h = nsec3_hash(*n, salt, iterations);
      check(h.has_value(), "SHA-1 is there");
      const std::string label = base32hex_encode(*h);
      check(label.size() == 32, "an NSEC3 hash is 20 octets");
      check(nsec3_hash(n->lowercased(), salt, iterations) == h, "the hash ignores case");
      const auto owner = wire::Name::from_text(label + ".example");
      check(owner && nsec3_owner_hash(*owner, name("example")) == h, "owner label round trip");
      break;
    }
    case 5: {
      Cursor c(in);
      fuzz_nsec_proofs(c);
      break;
    }
    case 6: {
      Cursor c(in);
      fuzz_nsec3_proofs(c);
      break;
    }
  }
  return 0;
}
