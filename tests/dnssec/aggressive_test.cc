// dnssec/aggressive.h (RFC 8198) against the real knotd hierarchy (tests/dnssec/hierarchy.h):
// an iterating Unbound answers, AnswerValidation validates, proven_denial() is learned, and
// what the store then synthesises for other names must itself validate as secure — the check
// a downstream validating client would make. Then what it must never do: answer from a range
// it did not learn, past the TTL, below a delegation, through an Opt-Out range, from a record
// that was never verified, or beyond its bounds.
#include "dnssec/aggressive.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dnssec/answer.h"
#include "tests/dnssec/hierarchy.h"
#include "tests/support/requires.h"
#include "wire/message.h"
#include "wire/writer.h"

namespace hg::dnssec {
namespace {

using Bytes = std::vector<uint8_t>;
using test::name;
using test::now_seconds;

constexpr uint16_t kRd = 0x0100;
constexpr uint16_t kCd = 0x0010;
constexpr uint16_t kA = 1;
constexpr uint16_t kTxt = 16;
constexpr uint16_t kAaaa = 28;
constexpr uint16_t kMx = 15;

// The RCODE of a whole message.
int rcode_of(const Bytes& m) {
  return m.size() >= 4 ? (m[3] & 0x0f) : -1;
}

// --- Against the hierarchy ---

class Aggressive : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    h_ = test::Hierarchy::get(error);
    if (h_ != nullptr) upstream_ = h_->unbound(false, error);
    if (upstream_ == nullptr) {
      if (error.find("not installed") != std::string::npos) HG_SKIP_UNLESS_CI(error);
      FAIL() << error;
    }
    auto t = parse_trust_anchors(h_->root_ds_file(), "root-ds");
    ASSERT_TRUE(t) << t.error();
    anchors_ = std::move(*t);
  }

  Bytes ask(const std::string& qname, uint16_t qtype) {
    auto r = test::dns_query(upstream_->port(), qname, qtype, kRd | kCd);
    EXPECT_TRUE(r) << qname;
    return r ? *r : Bytes{};
  }

  // `response` validated for `qname` `qtype` at `now`, its fetches asked of the upstream; the
  // keys every walk established are kept for the next validation.
  std::unique_ptr<AnswerValidation> validate(const wire::Name& qname, uint16_t qtype,
                                             const Bytes& response, int64_t now) {
    ChainWalk::Known known = [this](const wire::Name& z) -> const ZoneKeys* {
      for (const auto& k : keys_)
        if (k.zone == z) return &k;
      return nullptr;
    };
    auto v = std::make_unique<AnswerValidation>(anchors_, response, qname, qtype, now, known);
    EXPECT_TRUE(test::fetch_all(*v, upstream_->port()));
    for (const auto& k : v->learned())
      keys_.push_back(k);
    return v;
  }

  // Asks, validates (it must be secure) and learns; the proven denial, or nullopt.
  std::optional<ProvenDenial> learn(AggressiveCache& store, const std::string& qname,
                                    uint16_t qtype, int64_t now, std::size_t* kept = nullptr) {
    const auto v = validate(name(qname), qtype, ask(qname, qtype), now);
    EXPECT_EQ(v->verdict().security, Security::Secure) << qname;
    const auto& p = v->proven_denial();
    EXPECT_TRUE(p.has_value()) << qname;
    if (!p) return std::nullopt;
    const std::size_t n = store.learn(*p, now);
    if (kept != nullptr) *kept = n;
    return *p;
  }

  // The synthesised response validated as any upstream answer is: it must be secure, and a
  // denial of the same kind.
  void expect_validates(const Synthesis& s, const std::string& qname, uint16_t qtype, int64_t now) {
    SCOPED_TRACE("synthesised for " + qname);
    const auto v = validate(name(qname), qtype, s.response, now);
    EXPECT_EQ(v->verdict().security, Security::Secure)
        << "why " << static_cast<int>(v->verdict().why);
    EXPECT_TRUE(v->proven_denial().has_value());
    EXPECT_EQ(rcode_of(s.response), static_cast<int>(s.rcode));
    EXPECT_LE(v->verdict().ttl, s.ttl);
  }

  std::optional<Synthesis> synth(AggressiveCache& store, const std::string& qname, uint16_t qtype,
                                 int64_t now) {
    HashBudget hashes(kDefaultNsec3HashBudget);
    return store.synthesize(name(qname), qtype, 1, now, hashes);
  }

  const test::Hierarchy* h_ = nullptr;
  test::UnboundServer* upstream_ = nullptr;
  TrustAnchors anchors_;
  std::vector<ZoneKeys> keys_;
};

TEST_F(Aggressive, AnNsecNxdomainAnswersOtherNamesInItsRangeAndTheAnswerValidates) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  std::size_t kept = 0;
  const auto p = learn(store, "nothing.test.", kA, now, &kept);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->zone, name("test."));
  EXPECT_TRUE(p->nxdomain);
  EXPECT_FALSE(p->nsec3);
  // The cover of nothing.test. (nokey.test. → notyet.test., two of the broken zones' cuts)
  // and of *.test. (the apex's, → expired.test.).
  EXPECT_EQ(p->records.size(), 2u);
  EXPECT_EQ(kept, 2u);
  EXPECT_GT(p->ttl, 0u);
  EXPECT_LE(p->ttl, 300u);  // the SOA's MINIMUM (hierarchy.h soa())
  for (const char* q :
       {"nope.test.", "noq.test.", "NOPE-UPPER.test.", "deeper.nope.test.", "nothin.test."}) {
    SCOPED_TRACE(q);
    const auto s = synth(store, q, kAaaa, now);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->rcode, wire::RCode::NXDomain);
    EXPECT_EQ(rcode_of(ask(q, kAaaa)), 3) << "the upstream agrees";
    expect_validates(*s, q, kAaaa, now);
  }
  // Other ranges (notyet.test. → privalg.test., wrongds.test. → the apex), never learned.
  EXPECT_FALSE(synth(store, "ohno.test.", kA, now));
  EXPECT_FALSE(synth(store, "zzz.test.", kA, now));
  // Names that exist, or lie outside every zone learned.
  EXPECT_FALSE(synth(store, "ns.test.", kA, now));
  EXPECT_FALSE(synth(store, "privalg.test.", kA, now));
  EXPECT_FALSE(synth(store, "nope.example.", kA, now));
  // Only class IN, never ANY.
  HashBudget hashes(kDefaultNsec3HashBudget);
  EXPECT_TRUE(store.synthesize(name("nope.test."), kA, 1, now, hashes));
  EXPECT_FALSE(store.synthesize(name("nope.test."), kA, 3, now, hashes));
  EXPECT_FALSE(store.synthesize(name("nope.test."), 255, 1, now, hashes));
}

TEST_F(Aggressive, TheRootsNsecAnswersARandomTopLevelFlood) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  ASSERT_TRUE(learn(store, "nothing.", kA, now));
  for (int i = 0; i < 20; ++i) {
    const std::string q = "flood" + std::to_string(i * 7919) + ".";
    const auto s = synth(store, q, kA, now);
    ASSERT_TRUE(s) << q;
    EXPECT_EQ(s->rcode, wire::RCode::NXDomain);
    if (i < 3) expect_validates(*s, q, kA, now);
  }
}

TEST_F(Aggressive, TtlsCountDownAndRecordsExpire) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  const auto p = learn(store, "nothing.test.", kA, now);
  ASSERT_TRUE(p);
  const auto fresh = synth(store, "nope.test.", kA, now);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->ttl, p->ttl);
  const auto later = synth(store, "nope.test.", kA, now + 10);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->ttl, p->ttl - 10);
  // Every record of it carries that TTL.
  wire::Message m;
  ASSERT_TRUE(m.parse(later->response));
  for (const auto& rr : m.section(wire::Section::Authority))
    EXPECT_EQ(rr.ttl, p->ttl - 10);
  EXPECT_TRUE(synth(store, "nope.test.", kA, now + p->ttl - 1));
  EXPECT_FALSE(synth(store, "nope.test.", kA, now + p->ttl));
  EXPECT_FALSE(synth(store, "m.test.", kA, now + p->ttl + 3600));
}

TEST_F(Aggressive, NodataAtANameAndAtAnEmptyNonTerminal) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  const auto p = learn(store, "host.ent.test.", kAaaa, now);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->nxdomain);
  EXPECT_EQ(p->records.size(), 1u);
  auto s = synth(store, "host.ent.test.", kTxt, now);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rcode, wire::RCode::NoError);
  expect_validates(*s, "host.ent.test.", kTxt, now);
  EXPECT_FALSE(synth(store, "host.ent.test.", kA, now)) << "A exists there";
  ASSERT_TRUE(learn(store, "ent.test.", kA, now));
  s = synth(store, "ent.test.", kMx, now);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rcode, wire::RCode::NoError);
  expect_validates(*s, "ent.test.", kMx, now);
}

TEST_F(Aggressive, NothingAtOrBelowADelegationTheNsecShows) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  // test.'s NSEC at unsigned.test. (NS, no DS): proven NODATA for its DS.
  const auto p = learn(store, "unsigned.test.", kTypeDs, now);
  ASSERT_TRUE(p);
  ASSERT_EQ(store.size(), 1u);
  EXPECT_FALSE(synth(store, "unsigned.test.", kTypeDs, now)) << "DS at the parent side";
  EXPECT_FALSE(synth(store, "unsigned.test.", kA, now));
  EXPECT_FALSE(synth(store, "x.unsigned.test.", kA, now)) << "the child's to say";
  EXPECT_FALSE(synth(store, "a.b.unsigned.test.", kTxt, now));
  // The same below a signed delegation (NS and DS): signed.test. is another zone.
  ASSERT_TRUE(learn(store, "signed.test.", kTxt, now));  // the child's apex NSEC3: NODATA
  EXPECT_FALSE(synth(store, "nothing.signed.test.", kA, now));
}

TEST_F(Aggressive, Nsec3WithoutOptOutClosestEncloserProofsValidate) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  const auto p = learn(store, "nothing.deep.signed.test.", kA, now);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->nsec3);
  EXPECT_TRUE(p->nxdomain);
  // One record may be all of the proof: with a handful of names in the zone, the apex's
  // NSEC3 often also covers the next closer name's hash and the wildcard's.
  EXPECT_GE(p->records.size(), 1u);
  EXPECT_LE(p->records.size(), 3u);
  // Which names the records learned cover, by their hashes: exactly those are answered
  // (the closest encloser, the apex, and the wildcard's cover are among the records). The
  // salt is knotd's, new each run: how many fall in the ranges learned varies.
  std::vector<std::pair<Nsec3Hash, Nsec3Hash>> ranges;
  Bytes salt;
  uint16_t iterations = 0;
  for (const auto& r : p->records) {
    const auto n = parse_nsec3(r.set.rdatas[0]);
    const auto owner = nsec3_owner_hash(r.set.owner, p->zone);
    ASSERT_TRUE(n && owner);
    EXPECT_FALSE(n->opt_out());
    Nsec3Hash next{};
    std::copy(n->next_hashed.begin(), n->next_hashed.end(), next.begin());
    ranges.emplace_back(*owner, next);
    salt.assign(n->salt.begin(), n->salt.end());
    iterations = n->iterations;
  }
  int synthesised = 0;
  std::vector<std::string> missed;
  for (int i = 0; i < 64; ++i) {
    const std::string q = "n" + std::to_string(i) + ".deep.signed.test.";
    const auto h = nsec3_hash(name(q), salt, iterations);
    ASSERT_TRUE(h);
    bool covered = false;
    for (const auto& [owner, next] : ranges)
      covered = covered || nsec3_covers(owner, next, *h);
    const auto s = synth(store, q, kA, now);
    EXPECT_EQ(s.has_value(), covered) << q;
    if (!s) {
      missed.push_back(q);
      continue;
    }
    ++synthesised;
    EXPECT_EQ(s->rcode, wire::RCode::NXDomain) << q;
    if (synthesised <= 3) expect_validates(*s, q, kA, now);
  }
  EXPECT_GT(synthesised, 0);
  // The others are learned from upstream, and then answered too.
  for (const auto& q : missed)
    ASSERT_TRUE(learn(store, q, kA, now)) << q;
  for (const auto& q : missed) {
    const auto s = synth(store, q, kA, now);
    ASSERT_TRUE(s) << q;
    EXPECT_EQ(s->rcode, wire::RCode::NXDomain);
  }
  if (!missed.empty())
    expect_validates(*synth(store, missed.front(), kA, now), missed.front(), kA, now);
  // NODATA at an existing name, NSEC3 matching it.
  ASSERT_TRUE(learn(store, "a.deep.signed.test.", kTxt, now));
  const auto s = synth(store, "a.deep.signed.test.", kMx, now);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rcode, wire::RCode::NoError);
  expect_validates(*s, "a.deep.signed.test.", kMx, now);
  EXPECT_FALSE(synth(store, "a.deep.signed.test.", kA, now));
  // A budget too small for the closest encloser proof: nothing, not a guess.
  HashBudget tiny(1);
  EXPECT_FALSE(store.synthesize(name("n0.deep.signed.test."), kA, 1, now, tiny));
}

TEST_F(Aggressive, AWildcardThatExistsIsNeverDeniedNxdomain) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  // A wildcard NODATA under *.w.deep.signed.test. (it has A, not TXT), and the zone's ranges.
  const auto p = learn(store, "zz.w.deep.signed.test.", kTxt, now);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->nxdomain);
  ASSERT_TRUE(learn(store, "nothing.deep.signed.test.", kA, now));
  auto s = synth(store, "zz.w.deep.signed.test.", kTxt, now);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rcode, wire::RCode::NoError);
  expect_validates(*s, "zz.w.deep.signed.test.", kTxt, now);
  for (int i = 0; i < 24; ++i) {
    const std::string q = "q" + std::to_string(i) + ".w.deep.signed.test.";
    EXPECT_FALSE(synth(store, q, kA, now)) << q << ": the wildcard answers it";
    s = synth(store, q, kTxt, now);
    if (s) {
      EXPECT_EQ(s->rcode, wire::RCode::NoError) << q;
      expect_validates(*s, q, kTxt, now);
    }
  }
}

TEST_F(Aggressive, AnOptOutZoneIsNeverSynthesised) {
  AggressiveCache store;
  const int64_t now = now_seconds();
  // NXDOMAIN through an Opt-Out range is insecure: nothing to learn.
  const auto v = validate(name("nothing.signed.test."), kA, ask("nothing.signed.test.", kA), now);
  EXPECT_NE(v->verdict().security, Security::Secure);
  EXPECT_FALSE(v->proven_denial().has_value());
  // A secure NODATA whose NSEC3 records carry Opt-Out: proven, but none of it is kept.
  std::size_t kept = 1;
  const auto p = learn(store, "www.signed.test.", kTxt, now, &kept);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->nsec3);
  EXPECT_EQ(kept, 0u);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_FALSE(synth(store, "www.signed.test.", kTxt, now));
  EXPECT_FALSE(synth(store, "other.signed.test.", kA, now));
}

// The authority section of `response` rewritten with `extra` records after its own, each
// (owner, type, RDATA); names in RDATA written uncompressed, as canonical_rdata() gives them.
struct Extra {
  wire::Name owner;
  uint16_t type;
  Bytes rdata;
};
Bytes with_authority(const Bytes& response, const std::vector<Extra>& extra) {
  wire::Message m;
  if (!m.parse(response)) return {};
  Bytes out(65535);
  wire::WireWriter w(out);
  bool ok = w.u16(m.header().id) && w.u16(m.header().flags) && w.u16(1) && w.u16(0) && w.u16(0) &&
            w.u16(0) && w.name(m.questions()[0].name) &&
            w.u16(static_cast<uint16_t>(m.questions()[0].type)) && w.u16(1);
  uint16_t count = 0;
  auto record = [&](const wire::Name& owner, uint16_t type, uint32_t ttl, const Bytes& rdata) {
    ok = ok && w.name(owner, false) && w.u16(type) && w.u16(1) && w.u32(ttl) &&
         w.u16(static_cast<uint16_t>(rdata.size())) && w.bytes(rdata);
    ++count;
  };
  for (const auto& s : section_rrsets(m, wire::Section::Authority)) {
    for (const auto& r : s.set.rdatas)
      record(s.set.owner, s.set.type, s.set.ttl, r);
    for (const auto& r : s.set.rrsigs)
      record(s.set.owner, 46, s.set.ttl, r);
  }
  for (const auto& e : extra)
    record(e.owner, e.type, 300, e.rdata);
  if (!ok) return {};
  w.patch_u16(8, count);
  out.resize(w.size());
  return out;
}

Bytes nsec_rdata(const wire::Name& next, std::vector<uint16_t> types) {
  Bytes r(next.wire().begin(), next.wire().end());
  const Bytes bitmap = encode_type_bitmap(types);
  r.insert(r.end(), bitmap.begin(), bitmap.end());
  return r;
}

TEST_F(Aggressive, AnNsecThatWasNeverVerifiedIsNeverLearned) {
  const int64_t now = now_seconds();
  const Bytes real = ask("nothing.test.", kA);
  // An RRSIG of the zone, real but for another RRset: it cannot verify the forged one.
  wire::Message m;
  ASSERT_TRUE(m.parse(real));
  Bytes stolen;
  for (const auto& s : section_rrsets(m, wire::Section::Authority))
    if (s.set.type == 47 && !s.set.rrsigs.empty()) stolen = s.set.rrsigs[0];
  ASSERT_FALSE(stolen.empty());
  // An NSEC from the zone's first name round to the apex: it would deny every name of test.
  const std::vector<Extra> forged{
      {name("a.test."), 47, nsec_rdata(name("test."), {47, 46})},
      {name("a.test."), 46, stolen},
  };
  const Bytes tampered = with_authority(real, forged);
  ASSERT_FALSE(tampered.empty());
  const auto v = validate(name("nothing.test."), kA, tampered, now);
  // The verdict rests on the real records, as before; the forged one is no part of it.
  ASSERT_EQ(v->verdict().security, Security::Secure);
  ASSERT_TRUE(v->proven_denial());
  for (const auto& r : v->proven_denial()->records)
    EXPECT_FALSE(r.set.owner == name("a.test.")) << "an unverified NSEC exposed";
  AggressiveCache store;
  EXPECT_EQ(store.learn(*v->proven_denial(), now), 2u);
  EXPECT_TRUE(synth(store, "nope.test.", kA, now));
  EXPECT_FALSE(synth(store, "zzz.test.", kA, now));
  EXPECT_FALSE(synth(store, "ohno.test.", kA, now));
  // Without any valid proof beside it, the forged NSEC makes the answer bogus: nothing exposed.
  wire::Message only;
  Bytes bare = with_authority(real, {});
  ASSERT_TRUE(only.parse(bare));
  const std::vector<Extra> alone{
      {name("test."), 47, nsec_rdata(name("test."), {2, 6, 46, 47, 48})},
      {name("test."), 46, stolen},
  };
  // The real NSEC records made a private type, the forged one the only NSEC left.
  Bytes stripped = with_authority(real, alone);
  wire::Message sm;
  ASSERT_TRUE(sm.parse(stripped));
  const auto auth = sm.section(wire::Section::Authority);
  for (std::size_t i = 0; i + 2 < auth.size(); ++i)
    if (static_cast<uint16_t>(auth[i].type) == 47 && !(sm.owner(auth[i]) == name("test.")))
      stripped[auth[i].ttl_offset - 4u] = 0xff;
  const auto bogus = validate(name("nothing.test."), kA, stripped, now);
  EXPECT_EQ(bogus->verdict().security, Security::Bogus);
  EXPECT_FALSE(bogus->proven_denial());
}

// --- The store alone, on records made here (it checks no signature: learn() trusts
// proven_denial() for that, and only the shapes and bounds are tested) ---

CheckedRrset set_of(const wire::Name& owner, uint16_t type, Bytes rdata, uint32_t ttl = 3600) {
  Rrset s{owner, type, 1, ttl, {std::move(rdata)}, {Bytes(64, 0x5a)}};
  return CheckedRrset{s, ttl, 1};
}

Bytes soa_rdata(const wire::Name& apex, uint32_t minimum = 300) {
  Bytes r;
  for (const auto* n : {"ns", "host"}) {
    const wire::Name full = name(std::string(n) + "." + apex.to_text());
    r.insert(r.end(), full.wire().begin(), full.wire().end());
  }
  for (uint32_t v : {1u, 3600u, 600u, 86400u, minimum})
    for (int shift = 24; shift >= 0; shift -= 8)
      r.push_back(static_cast<uint8_t>(v >> shift));
  return r;
}

// A denial in `apex`: its apex NSEC (to "a." under it: covers the wildcard) and one NSEC
// from `owner` to `next`.
ProvenDenial denial(const std::string& apex, const std::string& owner, const std::string& next) {
  ProvenDenial d;
  d.zone = name(apex);
  d.qname = d.zone;
  d.nxdomain = true;
  d.soa = set_of(d.zone, kTypeSoa, soa_rdata(d.zone));
  d.records.push_back(set_of(d.zone, 47, nsec_rdata(name("a." + apex), {2, 6, 46, 47})));
  d.records.push_back(set_of(name(owner), 47, nsec_rdata(name(next), {1, 46, 47})));
  d.ttl = 3600;
  return d;
}

std::optional<Synthesis> synth_at(AggressiveCache& store, const std::string& q, int64_t now) {
  HashBudget hashes(kDefaultNsec3HashBudget);
  return store.synthesize(name(q), kA, 1, now, hashes);
}

TEST(AggressiveStore, AResponseIsWholeAndParses) {
  AggressiveCache store;
  ASSERT_EQ(store.learn(denial("example.", "m.example.", "p.example."), 100), 2u);
  const auto s = synth_at(store, "n.example.", 100);
  ASSERT_TRUE(s);
  wire::Message m;
  ASSERT_TRUE(m.parse(s->response, wire::ParseMode::Strict));
  EXPECT_EQ(m.rcode(), wire::RCode::NXDomain);
  ASSERT_EQ(m.questions().size(), 1u);
  EXPECT_EQ(m.questions()[0].name, name("n.example."));
  EXPECT_TRUE(m.section(wire::Section::Answer).empty());
  // SOA, its RRSIG, and two NSEC with theirs.
  EXPECT_EQ(m.section(wire::Section::Authority).size(), 6u);
  EXPECT_EQ(s->ttl, 300u) << "the SOA's MINIMUM";
  EXPECT_FALSE(synth_at(store, "q.example.", 100));
  EXPECT_FALSE(synth_at(store, "n.example.", 400)) << "past the negative TTL";
}

TEST(AggressiveStore, MalformedDenialsAreRefusedWhole) {
  AggressiveCache store;
  const auto good = denial("example.", "m.example.", "p.example.");
  auto d = good;
  d.records[1].set.owner = name("m.elsewhere.");  // outside the zone
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.records[1].set.rdatas = {nsec_rdata(name("p.elsewhere."), {1})};  // next outside the zone
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.records[1].set.rdatas.push_back(nsec_rdata(name("q.example."), {1}));  // two records
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.records[1].set.rdatas = {Bytes{3, 'p', 0xff}};  // a name running off the end
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.records[1].set.rrsigs.clear();
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.soa.set.rdatas = {Bytes(21, 0)};  // no SOA RDATA
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.soa.set.owner = name("m.example.");  // not the apex's
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.soa.set.rdatas = {soa_rdata(d.zone, 0)};  // MINIMUM 0: nothing may be reused
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.records[1].set.type = 50;  // an NSEC3 in an NSEC denial
  EXPECT_EQ(store.learn(d, 100), 0u);
  d = good;
  d.nsec3 = true;  // NSEC records claimed as NSEC3
  EXPECT_EQ(store.learn(d, 100), 0u);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.zones(), 0u);
  EXPECT_EQ(store.learn(good, 100), 2u);
}

TEST(AggressiveStore, BoundedOverallAndPerZoneOldestFirst) {
  AggressiveCache store(AggressiveLimits{.max_records = 100, .max_per_zone = 40});
  ASSERT_EQ(store.learn(denial("other.", "m.other.", "p.other."), 1), 2u);
  // A flood of denials under one zone, each with a new range: a zone walked on purpose.
  auto owner = [](int i) {
    std::string n = std::to_string(i);
    return "n" + std::string(5 - n.size(), '0') + n + ".example.";
  };
  auto after = [](const std::string& o) { return "z" + o; };  // n00001.example. < zn00001...
  for (int i = 0; i < 5000; ++i) {
    const std::string o = owner(i);
    const std::string next = "n" + o.substr(1, 5) + "z.example.";
    ASSERT_EQ(store.learn(denial("example.", o, next), 2 + i), 2u);
    ASSERT_LE(store.size(), 100u);
  }
  (void)after;
  EXPECT_EQ(store.size(), 42u) << "40 in example., 2 in other.";
  EXPECT_EQ(store.zones(), 2u);
  // The newest ranges are held, the oldest gone; the other zone kept its own.
  EXPECT_TRUE(synth_at(store, "n04999m.example.", 10));
  EXPECT_TRUE(synth_at(store, "n04962m.example.", 10));
  EXPECT_FALSE(synth_at(store, "n04900m.example.", 10));
  EXPECT_FALSE(synth_at(store, "n00000m.example.", 10));
  EXPECT_TRUE(synth_at(store, "n.other.", 10));
  // Many zones: the oldest zones go first, and never more than the bound in all.
  for (int i = 0; i < 300; ++i) {
    const std::string z = "z" + std::to_string(i) + ".";
    ASSERT_EQ(store.learn(denial(z, "m." + z, "p." + z), 20), 2u);
    ASSERT_LE(store.size(), 100u);
  }
  EXPECT_EQ(store.size(), 100u);
  EXPECT_EQ(store.zones(), 50u);
  EXPECT_FALSE(synth_at(store, "n.other.", 21));
  EXPECT_FALSE(synth_at(store, "n.z0.", 21));
  EXPECT_TRUE(synth_at(store, "n.z299.", 21));
}

TEST(AggressiveStore, AZoneWhoseRecordsExpiredIsDroppedWhole) {
  // Found by tests/fuzz/aggressive_fuzz.cc: expired records dropped on the way left their
  // zone behind, SOA and all, without bound.
  AggressiveCache store;
  ASSERT_EQ(store.learn(denial("example.", "m.example.", "p.example."), 100), 2u);
  EXPECT_FALSE(synth_at(store, "n.example.", 100 + 3600));
  EXPECT_FALSE(synth_at(store, "b.example.", 100 + 3600));
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.zones(), 0u);
}

TEST(AggressiveStore, ARecordLearnedAgainIsReplacedNotDoubled) {
  AggressiveCache store;
  const auto d = denial("example.", "m.example.", "p.example.");
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(store.learn(d, 100 + i), 2u);
  EXPECT_EQ(store.size(), 2u);
  // Renewed: its TTL runs from the last time.
  EXPECT_TRUE(synth_at(store, "n.example.", 199 + 299));
}

}  // namespace
}  // namespace hg::dnssec
