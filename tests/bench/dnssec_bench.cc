// What DNSSEC validation costs in CPU: one signature check per algorithm (a valid signature,
// the whole arithmetic), and what a KeyTrap-style RRset costs before its Budget stops it —
// 50 RRSIGs naming one key, none of them valid (with a valid key every check does the full
// arithmetic; a key that is not even a point on the curve would be refused sooner).
// With Budget's defaults a query pays at most `failures` failed checks and `verifications`
// checks in all, so the worst a query can cost is the slowest check times `verifications`:
// docs/dnssec.md will quote the figures.
//
//   cmake -S . -B build -DHG_BENCH=ON && cmake --build build -j2 --target hg_dnssec_bench
//   ./build/tests/bench/hg_dnssec_bench
#include <benchmark/benchmark.h>

#include <vector>

#include "dnssec/crypto.h"
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

}  // namespace

BENCHMARK_MAIN();
