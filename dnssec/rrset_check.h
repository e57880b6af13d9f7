// Checking signatures the way a validator must (RFC 4035 §5.2, §5.3): an RRset against the
// zone's validated DNSKEYs, and a zone's DNSKEY RRset against the DS records (or trust anchor)
// that vouch for it. Both are pure: time comes in as a parameter, the records come in as bytes.
//
// Everything here is paid for from a Budget the caller gives per query. Signature checks are
// what an attacker makes a validator do for free (KeyTrap, CVE-2023-50387: many keys with one
// key tag, many signatures per RRset, each one tried against each key), so every verify()
// call is counted, failed ones twice over, and a check that would need more than the budget
// stops with Why::BudgetExhausted instead of working on.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dnssec/signed_data.h"
#include "wire/name.h"

namespace hg::dnssec {

/// One RRset as received: the owner, type and class, its TTL, every record's canonical RDATA
/// (signed_data.h canonical_rdata) and the RDATA of every RRSIG that claims to cover it.
struct Rrset {
  wire::Name owner;
  uint16_t type = 0;
  uint16_t klass = 1;
  uint32_t ttl = 0;
  std::vector<std::vector<uint8_t>> rdatas;
  std::vector<std::vector<uint8_t>> rrsigs;
};

/// The signature work one query may cost. Successful checks are the honest work of a chain
/// of trust — a DS or NSEC check per label walked (chain.h: at most 40 fetches) and a DNSKEY
/// check per zone — so they get room for the longest walk twice over. Failed checks are what
/// an attacker buys (KeyTrap: every key of a tag tried against every signature): a few allow
/// for a key rollover with colliding tags, and then the query stops.
struct Budget {
  int verifications = 96;  ///< verify() calls, successful or not
  int failures = 4;        ///< verify() calls that did not succeed
};

/// Why a check did not end Secure; each maps to one RFC 8914 extended error code.
enum class Why : uint8_t {
  None,                  ///< Secure
  RrsigsMissing,         ///< no RRSIG for the RRset from its zone (EDE 10)
  SignatureExpired,      ///< every candidate RRSIG had expired (EDE 7)
  SignatureNotYetValid,  ///< every candidate RRSIG was from the future (EDE 8)
  DnskeyMissing,         ///< no key of the zone matches the RRSIG or the DS (EDE 9)
  BadSignature,          ///< a matching key, but the signature does not verify (EDE 6)
  NoSupportedAlgorithm,  ///< no DS/anchor with an algorithm and digest we do: insecure (EDE 1)
  BudgetExhausted,       ///< the query's Budget ran out before a verdict (EDE 0, "Other")
  Malformed,             ///< an RRSIG that cannot cover this RRset or a broken record (EDE 6)
  NsecMissing,           ///< a denial the NSEC/NSEC3 records do not prove (EDE 12)
  Nsec3Iterations,       ///< only NSEC3 with too many iterations: insecure (EDE 27)
  FetchFailed,           ///< a DS or DNSKEY the chain needs could not be had (EDE 22)
};

enum class Security : uint8_t { Secure, Insecure, Bogus };

struct CheckResult {
  Security security = Security::Bogus;
  Why why = Why::None;
  /// Secure only: the longest the RRset may be cached — the smallest of its TTL, the
  /// RRSIG's Original TTL and the time left before the RRSIG expires (RFC 4035 §5.3.3).
  uint32_t ttl = 0;
  /// Secure only: the key tag of the key whose signature verified.
  uint16_t key_tag = 0;
  /// Secure only: that RRSIG's Labels field; fewer than the owner's labels means the RRset
  /// was synthesised from a wildcard (RFC 4035 §5.3.4), which the caller must then prove.
  uint8_t labels = 0;
};

/// How much clock skew a validity window is allowed, seconds: a tenth of the window, at most
/// an hour — a host whose clock is minutes off still validates, a signature expired for
/// longer than that does not.
uint32_t skew_allowance(uint32_t inception, uint32_t expiration) noexcept;

/// RFC 4034 §3.1.5: whether `now` (seconds since 1970) lies in [inception, expiration] with
/// the skew allowance, in serial number arithmetic (RFC 1982), so 32-bit times work past 2106.
/// Returns Why::None, SignatureExpired or SignatureNotYetValid.
Why window_check(uint32_t inception, uint32_t expiration, int64_t now) noexcept;

/// RFC 4035 §5.3: `set` is Secure when one of its RRSIGs, made by `zone` for this owner and
/// type, within its validity window, verifies with a key of `dnskeys` (DNSKEY RDATAs of
/// `zone`, already validated) that has the Zone Key flag, protocol 3, and the RRSIG's
/// algorithm and key tag. Otherwise Bogus, with the reason of the RRSIG that came closest.
/// An RRset whose only RRSIGs use algorithms verify() does not do is Bogus here: whether the
/// zone counts as insecure for that is decided by check_dnskeys(), from the DS.
CheckResult check_rrset(const Rrset& set, const wire::Name& zone,
                        std::span<const std::vector<uint8_t>> dnskeys, int64_t now, Budget& budget);

/// RFC 4035 §5.2: the DNSKEY RRset `keys` of `zone` is Secure when a key in it matches one of
/// `ds` (DS RDATAs from the parent, or a trust anchor's) and that key's RRSIG over the whole
/// RRset verifies. Insecure (Why::NoSupportedAlgorithm) when no DS has both an algorithm and
/// a digest type this validator does (RFC 4035 §5.2, RFC 6840 §5.2); DS records with SHA-1
/// are ignored when the set has one with a stronger digest for the same key (RFC 4509 §3).
/// Bogus otherwise: no key matches (DnskeyMissing), or its signature fails.
CheckResult check_dnskeys(const Rrset& keys, std::span<const std::vector<uint8_t>> ds, int64_t now,
                          Budget& budget);

}  // namespace hg::dnssec
