// What DNSSEC validation costs in CPU: one signature check per algorithm (a valid signature,
// the whole arithmetic), and what a KeyTrap-style RRset costs before its Budget stops it —
// 50 RRSIGs naming one key, none of them valid (with a valid key every check does the full
// arithmetic; a key that is not even a point on the curve would be refused sooner).
// With Budget's defaults a query pays at most `failures` failed checks and `verifications`
// checks in all, so the worst a query can cost is the slowest check times `verifications`:
// docs/dnssec.md will quote the figures.
// Then RFC 8198 (dnssec/aggressive.h): what answering a name from the store of validated
// denials costs, with 10,000 NSEC or NSEC3 records of one zone held — the price of each name
// of a random-subdomain flood once its ranges are learned.
//
//   cmake -S . -B build -DHG_BENCH=ON && cmake --build build -j2 --target hg_dnssec_bench
//   ./build/tests/bench/hg_dnssec_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "dnssec/aggressive.h"
#include "dnssec/crypto.h"
#include "dnssec/denial.h"
#include "dnssec/rrset_check.h"
#include "dnssec/signed_data.h"
#include "tests/dnssec/test_keys.h"

namespace {

using namespace hg;
using dnssec::test::Bytes;
using dnssec::test::TestKey;

constexpr int64_t kNow = 1'800'000'000;

dnssec::Rrset a_set() {
  dnssec::Rrset s;
  s.owner = *wire::Name::from_text("www.example.test.");
  s.type = 1;
  s.ttl = 3600;
  s.rdatas = {{192, 0, 2, 1}, {192, 0, 2, 2}};
  return s;
}

const dnssec::test::SigSpec kValid{.inception = kNow - 86400, .expiration = kNow + 86400};

void BM_VerifyValid(benchmark::State& state) {
  const auto alg = static_cast<uint8_t>(state.range(0));
  const TestKey key(alg);
  const wire::Name zone = *wire::Name::from_text("example.test.");
  dnssec::Rrset s = a_set();
  s.rrsigs = {dnssec::test::sign_rrset(key, false, s, zone, kValid)};
  const std::vector<Bytes> keys{key.dnskey_rdata()};
  for (auto _ : state) {
    dnssec::Budget b;
    const auto r = dnssec::check_rrset(s, zone, keys, kNow, b);
    if (r.security != dnssec::Security::Secure) state.SkipWithError("not secure");
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(alg == 8    ? "RSA/SHA-256 2048"
                 : alg == 10 ? "RSA/SHA-512 2048"
                 : alg == 13 ? "ECDSA P-256"
                 : alg == 14 ? "ECDSA P-384"
                 : alg == 15 ? "Ed25519"
                             : "Ed448");
}
BENCHMARK(BM_VerifyValid)->Arg(8)->Arg(10)->Arg(13)->Arg(14)->Arg(15)->Arg(16);

// One check_rrset on an RRset with 50 bad RRSIGs for the zone's one key, with a query's
// default Budget: the most a KeyTrap RRset gets out of a query.
void BM_KeyTrapRrsetWithinBudget(benchmark::State& state) {
  const auto alg = static_cast<uint8_t>(state.range(0));
  const TestKey key(alg);
  const wire::Name zone = *wire::Name::from_text("example.test.");
  dnssec::Rrset s = a_set();
  for (int i = 0; i < 50; ++i) {
    Bytes sig = dnssec::test::sign_rrset(key, false, s, zone, kValid);
    sig.back() ^= static_cast<uint8_t>(i + 1);
    s.rrsigs.push_back(sig);
  }
  const std::vector<Bytes> keys{key.dnskey_rdata()};
  int checks = 0;
  for (auto _ : state) {
    dnssec::Budget b;
    const auto r = dnssec::check_rrset(s, zone, keys, kNow, b);
    if (r.why != dnssec::Why::BudgetExhausted) state.SkipWithError("not stopped by the budget");
    checks = dnssec::Budget{}.verifications - b.verifications;
    benchmark::DoNotOptimize(r);
  }
  state.counters["checks"] = checks;
}
BENCHMARK(BM_KeyTrapRrsetWithinBudget)->Arg(8)->Arg(14)->Arg(16)->Unit(benchmark::kMicrosecond);

// --- RFC 8198: synthesis from a store of 10,000 records ---

constexpr int kRecords = 10'000;

wire::Name bench_name(const std::string& text) {
  return *wire::Name::from_text(text);
}

std::string numbered(const char* prefix, int i, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%05d%s", prefix, i, suffix);
  return buf;
}

dnssec::CheckedRrset bench_set(const wire::Name& owner, uint16_t type, Bytes rdata) {
  // The store checks no signature (proven_denial() did): an RRSIG of a P-256 key's size.
  return {dnssec::Rrset{owner, type, 1, 3600, {std::move(rdata)}, {Bytes(96, 0x5a)}}, 3600, 1};
}

dnssec::ProvenDenial bench_denial(const wire::Name& zone, bool nsec3) {
  dnssec::ProvenDenial d;
  d.zone = zone;
  d.nsec3 = nsec3;
  d.nxdomain = true;
  Bytes soa;
  for (int i = 0; i < 2; ++i)
    soa.insert(soa.end(), zone.wire().begin(), zone.wire().end());
  for (uint32_t v : {1u, 3600u, 600u, 86400u, 3600u})
    for (int shift = 24; shift >= 0; shift -= 8)
      soa.push_back(static_cast<uint8_t>(v >> shift));
  d.soa = bench_set(zone, 6, soa);
  d.ttl = 3600;
  return d;
}

// A store holding a whole zone's chain of `kRecords` + 1 records, learned 8 at a time.
void fill(dnssec::AggressiveCache& store, const wire::Name& zone, bool nsec3,
          std::vector<dnssec::CheckedRrset> records) {
  for (std::size_t i = 0; i < records.size(); i += 8) {
    dnssec::ProvenDenial d = bench_denial(zone, nsec3);
    for (std::size_t j = i; j < std::min(records.size(), i + 8); ++j)
      d.records.push_back(records[j]);
    store.learn(d, kNow);
  }
}

const dnssec::AggressiveLimits kBenchLimits{.max_records = kRecords + 1,
                                            .max_per_zone = kRecords + 1};

void BM_SynthesizeNsec(benchmark::State& state) {
  const wire::Name zone = bench_name("example.");
  std::vector<wire::Name> owners{zone};
  for (int i = 0; i < kRecords; ++i)
    owners.push_back(bench_name(numbered("n", i, ".example.")));
  std::vector<dnssec::CheckedRrset> records;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const wire::Name& next = owners[(i + 1) % owners.size()];
    Bytes rdata(next.wire().begin(), next.wire().end());
    const std::vector<uint16_t> types =
        i == 0 ? std::vector<uint16_t>{2, 6, 46, 47, 48} : std::vector<uint16_t>{1, 46, 47};
    const Bytes bitmap = dnssec::encode_type_bitmap(types);
    rdata.insert(rdata.end(), bitmap.begin(), bitmap.end());
    records.push_back(bench_set(owners[i], 47, std::move(rdata)));
  }
  dnssec::AggressiveCache store(kBenchLimits);
  fill(store, zone, false, std::move(records));
  std::vector<wire::Name> names;
  for (int i = 0; i < 1024; ++i)
    names.push_back(bench_name(numbered("n", (i * 7919) % kRecords, "x.example.")));
  std::size_t at = 0;
  for (auto _ : state) {
    dnssec::HashBudget hashes(dnssec::kDefaultNsec3HashBudget);
    auto s = store.synthesize(names[at++ % names.size()], 1, 1, kNow + 1, hashes);
    if (!s) state.SkipWithError("not synthesised");
    benchmark::DoNotOptimize(s);
  }
  state.counters["records"] = static_cast<double>(store.size());
}
BENCHMARK(BM_SynthesizeNsec)->Unit(benchmark::kMicrosecond);

void BM_SynthesizeNsec3(benchmark::State& state) {
  const wire::Name zone = bench_name("example.");
  // Every name's hash at 0 iterations without salt (RFC 9276 §3.1), in hash order.
  std::vector<std::pair<dnssec::Nsec3Hash, bool>> hashes{{*dnssec::nsec3_hash(zone, {}, 0), true}};
  for (int i = 0; i < kRecords; ++i)
    hashes.push_back(
        {*dnssec::nsec3_hash(bench_name(numbered("n", i, ".example.")), {}, 0), false});
  std::sort(hashes.begin(), hashes.end());
  std::vector<dnssec::CheckedRrset> records;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    const auto& next = hashes[(i + 1) % hashes.size()].first;
    Bytes rdata{dnssec::kNsec3Sha1, 0, 0, 0, 0, dnssec::kNsec3HashSize};
    rdata.insert(rdata.end(), next.begin(), next.end());
    const std::vector<uint16_t> types =
        hashes[i].second ? std::vector<uint16_t>{2, 6, 46, 48, 51} : std::vector<uint16_t>{1, 46};
    const Bytes bitmap = dnssec::encode_type_bitmap(types);
    rdata.insert(rdata.end(), bitmap.begin(), bitmap.end());
    const wire::Name owner = bench_name(dnssec::base32hex_encode(hashes[i].first) + ".example.");
    records.push_back(bench_set(owner, 50, std::move(rdata)));
  }
  dnssec::AggressiveCache store(kBenchLimits);
  fill(store, zone, true, std::move(records));
  std::vector<wire::Name> names;
  for (int i = 0; i < 1024; ++i)
    names.push_back(bench_name(numbered("q", i, ".example.")));
  std::size_t at = 0;
  std::size_t hashed = 0;
  for (auto _ : state) {
    dnssec::HashBudget budget(dnssec::kDefaultNsec3HashBudget);
    auto s = store.synthesize(names[at++ % names.size()], 1, 1, kNow + 1, budget);
    if (!s) state.SkipWithError("not synthesised");
    hashed = budget.used();
    benchmark::DoNotOptimize(s);
  }
  state.counters["records"] = static_cast<double>(store.size());
  state.counters["sha1"] = static_cast<double>(hashed);
}
BENCHMARK(BM_SynthesizeNsec3)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
