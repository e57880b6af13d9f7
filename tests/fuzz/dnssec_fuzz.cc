// libFuzzer target for dnssec/: what a validator reads from an upstream answer — the RRsets of
// a message (rrsets.h), RRSIG RDATA (signed_data.h parse_rrsig), canonical RDATA and signed
// data, and the signature checks (rrset_check.h) run on all of it with the message's own
// DNSKEY and DS records as the keys, so a seed signed for real reaches a Secure verdict.
//
// The first input byte picks what the rest is:
//   0: a DNS message; every RRset of every section checked with the message's DNSKEYs, and
//      every DNSKEY RRset checked against the message's DS records;
//   1: an RRSIG RDATA, parsed and its signed data made for a fixed RRset;
//   2: two messages, the first's length in two bytes before it: the DNSKEYs and DS records of
//      the first are the keys for the second's RRsets (a DNSKEY answer, then an answer from
//      the same zone, as a validator gets them);
//   3: messages each after its length in two bytes: an answer, then the responses to the DS
//      and DNSKEY fetches its validation (answer.h) asks for, in order; the root's anchor is
//      the SHA-256 DS of each root DNSKEY in the second message.
// Properties, each an abort when violated:
//  1. Every RRSIG section_rrsets() attaches covers the RRset's type, and no RRset is an RRSIG.
//  2. The budget is never overdrawn: verifications and failures stay ≥ 0, and a check that
//     spent nothing said nothing Secure.
//  3. A Secure RRset's TTL is at most its TTL; Why is None exactly when it is Secure.
//  4. A parsed RRSIG's signature lies inside the input, and its signed data begins with the
//     RDATA's 18 fixed bytes.
//  5. A validation ends: once the responses run out, failed fetches end it within a bound, its
//     fetches within the walks' limits; a Secure verdict gives no reason.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "dnssec/answer.h"
#include "dnssec/rrset_check.h"
#include "dnssec/rrsets.h"
#include "dnssec/signed_data.h"
#include "dnssec/trust_anchor.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using namespace hg;
using hg::fuzz::check;

constexpr uint16_t kDnskey = 48;
constexpr uint16_t kDs = 43;

void check_result(const dnssec::CheckResult& r, const dnssec::Budget& before,
                  const dnssec::Budget& after, uint32_t ttl) {
  check(after.verifications >= 0 && after.failures >= 0, "budget never overdrawn");
  check(after.verifications <= before.verifications && after.failures <= before.failures,
        "budget only spent");
  if (r.security == dnssec::Security::Secure) {
    check(after.verifications < before.verifications, "secure only after a verification");
    check(r.ttl <= ttl, "secure TTL within the RRset's");
  }
  check((r.why == dnssec::Why::None) == (r.security == dnssec::Security::Secure),
        "a reason exactly when not secure");
}

void fuzz_message(std::span<const uint8_t> in, std::span<const uint8_t> keys_from = {}) {
  wire::Message m;
  if (!m.parse(in)) return;
  std::vector<dnssec::SectionRrset> all;
  if (!keys_from.empty()) {
    wire::Message k;
    if (!k.parse(keys_from)) return;
    for (auto& r : dnssec::section_rrsets(k, wire::Section::Answer))
      all.push_back(std::move(r));
  }
  for (const auto s : {wire::Section::Answer, wire::Section::Authority, wire::Section::Additional})
    for (auto& r : dnssec::section_rrsets(m, s))
      all.push_back(std::move(r));
  // The time: just after the first RRSIG's inception, so a seed signed for real validates
  // whatever the date the fuzzer runs on.
  int64_t now = 1'700'000'000;
  std::vector<std::vector<uint8_t>> keys, ds;
  for (const auto& r : all) {
    check(r.set.type != 46, "no RRSIG RRset");
    for (const auto& raw : r.set.rrsigs) {
      check(raw.size() >= 2 && (base::load_u16(&raw[0])) == r.set.type, "RRSIG covers the type");
      if (const auto sig = dnssec::parse_rrsig(raw); sig && now == 1'700'000'000)
        now = int64_t{sig->inception} + 1;
    }
    if (r.set.type == kDnskey) keys.insert(keys.end(), r.set.rdatas.begin(), r.set.rdatas.end());
    if (r.set.type == kDs) ds.insert(ds.end(), r.set.rdatas.begin(), r.set.rdatas.end());
  }
  dnssec::Budget budget;
  for (const auto& r : all) {
    if (r.uncheckable) continue;
    for (const auto& raw : r.set.rrsigs) {
      const auto sig = dnssec::parse_rrsig(raw);
      if (!sig) continue;
      const dnssec::Budget before = budget;
      const auto result = dnssec::check_rrset(r.set, sig->signer, keys, now, budget);
      check_result(result, before, budget, r.set.ttl);
    }
    if (r.set.type == kDnskey && !ds.empty()) {
      const dnssec::Budget before = budget;
      const auto result = dnssec::check_dnskeys(r.set, ds, now, budget);
      if (result.security != dnssec::Security::Insecure)
        check_result(result, before, budget, r.set.ttl);
    }
  }
}

void fuzz_rrsig(std::span<const uint8_t> in) {
  const auto sig = dnssec::parse_rrsig(in);
  if (!sig) return;
  check(sig->signature.data() >= in.data() &&
            sig->signature.data() + sig->signature.size() == in.data() + in.size(),
        "signature inside the input");
  const auto owner = wire::Name::from_text("a.b.c.example.test.");
  const auto data =
      dnssec::signed_data(*sig, *owner, sig->type_covered, 1, {{1, 2, 3, 4}, {5, 6}, {1, 2, 3, 4}});
  if (!data) {
    check(sig->labels > owner->label_count(), "signed data refused only for too many labels");
    return;
  }
  check(data->size() >= 18 && std::equal(in.begin(), in.begin() + 18, data->begin()),
        "signed data begins with the fixed fields");
}

// Up to 64 messages, each after its length in two bytes.
std::vector<std::span<const uint8_t>> split(std::span<const uint8_t> in) {
  std::vector<std::span<const uint8_t>> out;
  while (in.size() >= 2 && out.size() < 64) {
    const std::size_t n = std::min(static_cast<std::size_t>(base::load_u16(&in[0])), in.size() - 2);
    out.push_back(in.subspan(2, n));
    in = in.subspan(2 + n);
  }
  return out;
}

void fuzz_answer(std::span<const uint8_t> in) {
  const auto msgs = split(in);
  if (msgs.empty()) return;
  wire::Message m;
  if (!m.parse(msgs[0]) || m.questions().size() != 1) return;
  // The anchor: the DS of the root's keys in the second message, else one for no key.
  std::string anchor_text;
  int64_t now = 1'700'000'000;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    wire::Message k;
    if (!k.parse(msgs[i])) continue;
    for (const auto& r : dnssec::section_rrsets(k, wire::Section::Answer)) {
      for (const auto& raw : r.set.rrsigs)
        if (const auto sig = dnssec::parse_rrsig(raw); sig && now == 1'700'000'000)
          now = int64_t{sig->inception} + 1;
      if (i != 1 || r.set.type != kDnskey || !r.set.owner.is_root()) continue;
      for (const auto& key : r.set.rdatas) {
        const auto ds = dnssec::ds_of_dnskey(r.set.owner, key, 2);
        if (!ds) continue;
        anchor_text += ". DS " + std::to_string((ds->at(0) << 8) | ds->at(1)) + " " +
                       std::to_string(ds->at(2)) + " 2 ";
        static const char* hex = "0123456789ABCDEF";
        for (std::size_t b = 4; b < ds->size(); ++b) {
          anchor_text += hex[ds->at(b) >> 4];
          anchor_text += hex[ds->at(b) & 15];
        }
        anchor_text += "\n";
      }
    }
  }
  // A key the anchor parser refuses (algorithm 0, say) leaves the anchor for no key.
  auto anchors = dnssec::parse_trust_anchors(anchor_text, "fuzz");
  if (!anchors) anchors = dnssec::parse_trust_anchors(". DS 1 8 2 " + std::string(64, '0'), "fuzz");
  check(anchors.has_value(), "the anchor for no key parses");
  const auto& q = m.questions()[0];
  dnssec::AnswerValidation v(*anchors, msgs[0], q.name, static_cast<uint16_t>(q.type), now);
  for (std::size_t i = 1; i < msgs.size() && !v.done(); ++i)
    v.feed(msgs[i]);
  // Out of responses: every fetch fails, and each failure ends a walk (a piece needs one).
  for (int i = 0; i < 64 && !v.done(); ++i)
    v.feed({});
  check(v.done(), "a validation ends once its fetches fail");
  check(v.fetches() <= 64 + 40 * 18, "fetches within the walks' limits");
  if (v.verdict().security == dnssec::Security::Secure)
    check(v.verdict().why == dnssec::Why::None, "no reason for a secure verdict");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      fuzz_message(rest);
      break;
    case 2: {
      if (rest.size() < 2) break;
      const std::size_t n =
          std::min(static_cast<std::size_t>(base::load_u16(&rest[0])), rest.size() - 2);
      fuzz_message(rest.subspan(2 + n), rest.subspan(2, n));
      break;
    }
    case 3:
      fuzz_answer(rest);
      break;
    default:
      fuzz_rrsig(rest);
      break;
  }
  return 0;
}
