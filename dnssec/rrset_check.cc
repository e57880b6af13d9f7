#include "dnssec/rrset_check.h"

#include <algorithm>
#include <optional>

#include "base/bytes.h"
#include "dnssec/crypto.h"

namespace hg::dnssec {

namespace {

constexpr uint16_t kTypeDnskey = 48;
constexpr uint16_t kZoneKeyFlag = 0x0100;  // RFC 4034 §2.1.1, bit 7
constexpr uint8_t kProtocol = 3;           // RFC 4034 §2.1.2
// DS digests computed per check_dnskeys() call. A digest costs a microsecond, not a
// signature's hundreds, but a parent can list many DS for many keys of one tag.
constexpr int kMaxDigests = 64;

// How far a failed RRSIG got through RFC 4035 §5.3.1's checks: the one that got furthest
// says best what is wrong.
enum Stage : int {
  kNone = -1,
  kMalformed = 0,
  kWindow = 1,
  kNoKey = 2,
  kVerify = 3,
};

// Serial arithmetic (RFC 1982) on 32-bit times: a - b as a signed distance.
int64_t serial_diff(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>(a - b);
}

bool usable_key(std::span<const uint8_t> key, uint8_t algorithm, uint16_t tag) noexcept {
  return key.size() > 4 && (base::load_u16(key.data()) & kZoneKeyFlag) != 0 &&
         key[2] == kProtocol && key[3] == algorithm && key_tag(key) == tag;
}

}  // namespace

uint32_t skew_allowance(uint32_t inception, uint32_t expiration) noexcept {
  const int64_t window = serial_diff(expiration, inception);
  if (window <= 0) return 0;
  return static_cast<uint32_t>(std::min<int64_t>(window / 10, 3600));
}

Why window_check(uint32_t inception, uint32_t expiration, int64_t now) noexcept {
  const auto now32 = static_cast<uint32_t>(now);  // RFC 4034 §3.1.5: modulo 2^32
  const int64_t skew = skew_allowance(inception, expiration);
  if (serial_diff(now32, inception) < -skew) return Why::SignatureNotYetValid;
  if (serial_diff(expiration, now32) < -skew) return Why::SignatureExpired;
  return Why::None;
}

CheckResult check_rrset(const Rrset& set, const wire::Name& zone,
                        std::span<const std::vector<uint8_t>> dnskeys, int64_t now,
                        Budget& budget) {
  CheckResult best{Security::Bogus, Why::RrsigsMissing};
  int best_stage = kNone;
  auto note = [&](int stage, Why why) {
    if (stage > best_stage) {
      best_stage = stage;
      best.why = why;
    }
  };
  if (set.rdatas.empty() || !set.owner.is_subdomain_of(zone)) {
    best.why = Why::Malformed;
    return best;
  }
  for (const auto& raw : set.rrsigs) {
    const auto sig = parse_rrsig(raw);
    if (!sig) {
      note(kMalformed, Why::Malformed);
      continue;
    }
    // RFC 4035 §5.3.1: an RRSIG for another type, or made by another zone, or with an
    // algorithm we cannot check, is not one of this RRset's signatures at all.
    if (sig->type_covered != set.type || !(sig->signer == zone) ||
        !algorithm_supported(sig->algorithm))
      continue;
    if (sig->labels > set.owner.label_count()) {
      note(kMalformed, Why::Malformed);
      continue;
    }
    if (const Why w = window_check(sig->inception, sig->expiration, now); w != Why::None) {
      note(kWindow, w);
      continue;
    }
    std::optional<std::vector<uint8_t>> data;
    bool had_key = false;
    for (const auto& key : dnskeys) {
      if (!usable_key(key, sig->algorithm, sig->key_tag)) continue;
      had_key = true;
      if (!data) {
        data = signed_data(*sig, set.owner, set.type, set.klass, set.rdatas);
        if (!data) break;
      }
      if (budget.verifications <= 0 || budget.failures <= 0) {
        best.why = Why::BudgetExhausted;
        return best;
      }
      --budget.verifications;
      const VerifyResult r =
          verify(sig->algorithm, std::span<const uint8_t>(key).subspan(4), *data, sig->signature);
      if (r == VerifyResult::Valid) {
        // RFC 4035 §5.3.3: no longer than the TTL, the Original TTL, or the signature lasts.
        const int64_t left =
            std::max<int64_t>(serial_diff(sig->expiration, static_cast<uint32_t>(now)), 0);
        const int64_t ttl = std::min<int64_t>({set.ttl, sig->original_ttl, left});
        return CheckResult{Security::Secure, Why::None, static_cast<uint32_t>(ttl), sig->key_tag,
                           sig->labels};
      }
      --budget.failures;
      note(kVerify, Why::BadSignature);
    }
    if (!data && had_key) note(kMalformed, Why::Malformed);
    if (!had_key) note(kNoKey, Why::DnskeyMissing);
  }
  return best;
}

CheckResult check_dnskeys(const Rrset& keys, std::span<const std::vector<uint8_t>> ds, int64_t now,
                          Budget& budget) {
  CheckResult bogus{Security::Bogus, Why::Malformed};
  if (keys.type != kTypeDnskey) return bogus;
  // Which DS records count: an algorithm and digest type we do (RFC 4035 §5.2), and no SHA-1
  // when the set also has a stronger digest (RFC 4509 §3: a downgrade to SHA-1 is otherwise
  // possible for anyone who can forge a SHA-1 collision).
  bool strong = false;
  bool any_usable = false;
  for (const auto& d : ds) {
    if (d.size() < 4 || !algorithm_supported(d[2]) || !digest_supported(d[3])) continue;
    any_usable = true;
    strong = strong || d[3] != static_cast<uint8_t>(DigestType::Sha1);
  }
  if (!any_usable) {
    const bool malformed = std::any_of(ds.begin(), ds.end(), [](auto& d) { return d.size() < 4; });
    if (malformed || ds.empty()) return bogus;
    return CheckResult{Security::Insecure, Why::NoSupportedAlgorithm};
  }
  std::vector<std::vector<uint8_t>> vouched;
  int digests = 0;
  for (const auto& d : ds) {
    if (d.size() < 4 || !algorithm_supported(d[2]) || !digest_supported(d[3])) continue;
    if (strong && d[3] == static_cast<uint8_t>(DigestType::Sha1)) continue;
    const uint16_t tag = base::load_u16(d.data());
    for (const auto& key : keys.rdatas) {
      if (!usable_key(key, d[2], tag)) continue;
      if (++digests > kMaxDigests) {
        bogus.why = Why::BudgetExhausted;
        return bogus;
      }
      if (ds_matches(keys.owner, key, d) == DsMatch::Match &&
          std::find(vouched.begin(), vouched.end(), key) == vouched.end())
        vouched.push_back(key);
    }
  }
  if (vouched.empty()) {
    bogus.why = Why::DnskeyMissing;
    return bogus;
  }
  return check_rrset(keys, keys.owner, vouched, now, budget);
}

}  // namespace hg::dnssec
