// Authenticated denial of existence: what a set of NSEC (RFC 4034 §4, RFC 4035 §5.4) or NSEC3
// (RFC 5155) records proves about a name. The records are taken as already signature-checked
// by the caller (RRSIG, signer `zone`); this file only reasons about what they say, so every
// function is pure apart from the SHA-1 of NSEC3 hashing (OpenSSL's libcrypto).
//
//  - Parsers for NSEC, NSEC3 and NSEC3PARAM RDATA and a TypeBitmap view, strict to RFC 4034
//    §4.1.2 (windows in increasing order, bitmap lengths 1..32, no trailing zero octet):
//    the RDATA is untrusted and a malformed one is refused, never read past.
//  - Canonical name order (RFC 4034 §6.1) is wire::Name's operator<=>; nsec_covers() and
//    nsec3_covers() are the intervals of one record, wrapping around at the end of the chain.
//  - Proofs: NXDOMAIN, NODATA (with an empty non-terminal or a wildcard), a wildcard answer,
//    and an insecure delegation, each once over NSEC and once over NSEC3, with the rules
//    later RFCs added: the CNAME bit (RFC 6840 §4.3), the parent side of a delegation or a
//    DNAME proves nothing below it (RFC 6840 §4.1), an insecure delegation has NS and neither
//    DS nor SOA (RFC 6840 §4.4), Opt-Out makes a proof insecure (RFC 5155 §9.2), too many
//    iterations make it insecure (RFC 9276 §3.2).
//  - NSEC3 hashing is the cost an attacker controls (many records, many iterations, long
//    names: CVE-2023-50868): every proof draws its SHA-1 computations from a HashBudget the
//    caller sizes per response, and says BudgetExhausted rather than go over it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wire/name.h"

namespace hg::dnssec {

/// What a set of NSEC or NSEC3 records proves for the question asked of it.
enum class DenialVerdict : uint8_t {
  /// The records prove it: the answer is secure (RFC 4035 §5.4, RFC 5155 §8.4 to §8.9).
  Proven,
  /// The records prove it only up to Opt-Out: the NSEC3 covering the next closer name has
  /// the Opt-Out flag, so an unsigned delegation may hide there. The answer is insecure, not
  /// bogus: no AD bit (RFC 5155 §9.2), and for a DS an insecure delegation (§8.6, §8.9).
  ProvenInsecure,
  /// The records do not prove it (a record missing, a bit set that must not be, a name
  /// outside the zone): the answer is bogus, EDE 12 "NSEC Missing" (RFC 8914 §4.13).
  NotProven,
  /// The only NSEC3 records that could prove it have more iterations than the limit: the
  /// answer is insecure, EDE 27 "Unsupported NSEC3 Iterations Value" (RFC 9276 §3.2).
  IterationsTooHigh,
  /// Proving it would take more SHA-1 computations than the budget allows: the caller stops
  /// (SERVFAIL) rather than let a zone make it hash without end.
  BudgetExhausted,
};

/// "*." and `name` (RFC 4592 §2.1.1); nullopt when that would be longer than a name can be.
std::optional<wire::Name> wildcard_at(const wire::Name& name) noexcept;

/// Type codes the proofs look at (IANA RR type registry).
inline constexpr uint16_t kTypeNs = 2;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypeSoa = 6;
inline constexpr uint16_t kTypeDname = 39;
inline constexpr uint16_t kTypeDs = 43;

/// RFC 5155 §11: the one NSEC3 hash algorithm, SHA-1, and its output length.
inline constexpr uint8_t kNsec3Sha1 = 1;
inline constexpr std::size_t kNsec3HashSize = 20;
/// RFC 5155 §3.1.2.1: the Opt-Out flag.
inline constexpr uint8_t kNsec3OptOut = 0x01;
/// RFC 9276 §3.2 leaves the limit to the validator; 150 is the one BIND and Unbound settled on.
inline constexpr uint16_t kDefaultMaxNsec3Iterations = 150;
/// SHA-1 computations per response by default: 32 names at 150 iterations, or a name of
/// 127 labels (the most a name has) walked up to the root 37 times at 0 iterations.
inline constexpr std::size_t kDefaultNsec3HashBudget = 32 * (kDefaultMaxNsec3Iterations + 1);

/// The Type Bit Maps field of an NSEC or NSEC3 RDATA (RFC 4034 §4.1.2), checked when parsed.
/// A view: it points into the bytes parsed.
class TypeBitmap {
 public:
  /// An empty bitmap (no types; an NSEC3 of an empty non-terminal has one, RFC 5155 §7.1).
  TypeBitmap() = default;

  /// Checks `bytes` as a whole Type Bit Maps field: window blocks of window number, bitmap
  /// length (1..32) and bitmap, each window at most once and in increasing order, and no
  /// bitmap ending in a zero octet ("trailing zero octets MUST be omitted", which also rules
  /// out a block with no types). nullopt otherwise.
  static std::optional<TypeBitmap> parse(std::span<const uint8_t> bytes) noexcept;

  /// Whether `type` is in the bitmap.
  bool has(uint16_t type) const noexcept;
  /// Every type in the bitmap, in increasing order.
  std::vector<uint16_t> types() const;
  std::span<const uint8_t> wire() const noexcept { return bytes_; }

 private:
  explicit TypeBitmap(std::span<const uint8_t> bytes) noexcept : bytes_(bytes) {}
  std::span<const uint8_t> bytes_;
};

/// The Type Bit Maps field for `types` (any order, duplicates allowed), in the one form
/// TypeBitmap::parse() accepts.
std::vector<uint8_t> encode_type_bitmap(std::span<const uint16_t> types);

/// The fields of an NSEC RDATA (RFC 4034 §4.1). `types` points into the RDATA parsed.
struct Nsec {
  wire::Name next;
  TypeBitmap types;
};

/// Parses an NSEC RDATA: the Next Domain Name, uncompressed (RFC 4034 §4.1.1; RFC 6840 §5.1
/// keeps its case), then the type bitmap. nullopt when either is malformed.
std::optional<Nsec> parse_nsec(std::span<const uint8_t> rdata);

/// The fields of an NSEC3 RDATA (RFC 5155 §3.2). The spans point into the RDATA parsed.
struct Nsec3 {
  uint8_t hash_algorithm = 0;
  uint8_t flags = 0;
  uint16_t iterations = 0;
  std::span<const uint8_t> salt;
  std::span<const uint8_t> next_hashed;  ///< raw hash, not base32hex
  TypeBitmap types;
  bool opt_out() const noexcept { return (flags & kNsec3OptOut) != 0; }
};

/// Parses an NSEC3 RDATA; nullopt when a length runs past the end, the hash length is 0
/// (RFC 5155 §3.2: 1 to 255), or the type bitmap is malformed.
std::optional<Nsec3> parse_nsec3(std::span<const uint8_t> rdata);

/// The fields of an NSEC3PARAM RDATA (RFC 5155 §4.2); `salt` points into the RDATA parsed.
struct Nsec3Param {
  uint8_t hash_algorithm = 0;
  uint8_t flags = 0;
  uint16_t iterations = 0;
  std::span<const uint8_t> salt;
};

/// Parses an NSEC3PARAM RDATA; nullopt when the salt runs past the end or bytes follow it.
std::optional<Nsec3Param> parse_nsec3param(std::span<const uint8_t> rdata);

/// RFC 4648 §7 base32hex, lowercase and without padding, as NSEC3 owner labels are written.
std::string base32hex_encode(std::span<const uint8_t> bytes);
/// The inverse, ignoring case; nullopt for a character outside the alphabet, padding, a
/// length no whole number of octets encodes to, or non-zero bits left over at the end.
std::optional<std::vector<uint8_t>> base32hex_decode(std::string_view text);

using Nsec3Hash = std::array<uint8_t, kNsec3HashSize>;

/// RFC 5155 §5: IH(salt, name, iterations), SHA-1 over the canonical (lowercased) wire form
/// of `name` and the salt, then over the digest and the salt `iterations` more times: raw 20
/// bytes. nullopt only if OpenSSL fails. Costs iterations + 1 SHA-1 computations.
std::optional<Nsec3Hash> nsec3_hash(const wire::Name& name, std::span<const uint8_t> salt,
                                    uint16_t iterations);

/// The SHA-1 computations a proof may make (one per iteration, plus one, per name hashed).
/// One budget for a whole response: every proof made for it draws from it.
class HashBudget {
 public:
  explicit HashBudget(std::size_t limit) noexcept : limit_(limit) {}
  /// Takes `n` computations; false (and takes nothing) when that would exceed the limit.
  bool take(std::size_t n) noexcept {
    if (n > limit_ - used_) return false;
    used_ += n;
    return true;
  }
  std::size_t used() const noexcept { return used_; }
  std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
};

/// An NSEC record as the proofs take it: its owner and RDATA (signature already checked).
struct NsecRecord {
  wire::Name owner;
  std::vector<uint8_t> rdata;
};
/// An NSEC3 record as the proofs take it: its owner (the base32hex hash label, then the
/// zone) and RDATA (signature already checked).
struct Nsec3Record {
  wire::Name owner;
  std::vector<uint8_t> rdata;
};

// --- NSEC (RFC 4034 §4, RFC 4035 §5.4) ---

/// Whether an NSEC from `owner` to `next` covers `name`: `name` lies strictly between them in
/// canonical order (RFC 4034 §6.1). The last NSEC of a zone points back to the apex
/// (§4.1.1), so when `next` is not after `owner` the interval wraps around: everything after
/// `owner` or before `next`. The owner itself is never covered (it exists).
bool nsec_covers(const wire::Name& owner, const wire::Name& next, const wire::Name& name) noexcept;
/// Whether an NSEC at `owner` is the one for `name` (its owner, case ignored).
bool nsec_matches(const wire::Name& owner, const wire::Name& name) noexcept;
/// The closest encloser of `name` an NSEC covering it implies (RFC 4035 §5.4, RFC 5155 §1.3
/// for the term): of the ancestors `name` shares with `owner` and with `next` (both exist),
/// the longer; its descendants between them do not exist.
wire::Name nsec_closest_encloser(const wire::Name& owner, const wire::Name& next,
                                 const wire::Name& name) noexcept;

/// NXDOMAIN (RFC 4035 §3.1.3.2, §5.4): an NSEC covers `qname` and one covers (does not match)
/// the wildcard at the closest encloser the first implies. Proven or NotProven.
DenialVerdict nsec_prove_nxdomain(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                  const wire::Name& zone);
/// NODATA for `qtype` at `qname` (RFC 4035 §3.1.3.1, §5.4): an NSEC at `qname` without
/// `qtype` or CNAME (RFC 6840 §4.3); or, for an empty non-terminal, an NSEC covering `qname`
/// whose next name is below it; or the wildcard NODATA of §3.1.3.4: `qname` covered and an
/// NSEC at the wildcard of its closest encloser without `qtype` or CNAME. An NSEC at a
/// delegation's parent side (NS without SOA) proves only DS's absence (RFC 6840 §4.1); for
/// a DS, an NSEC with SOA is the child's apex, not the parent's, and proves nothing (except
/// at the root, which has no parent). Proven or NotProven.
DenialVerdict nsec_prove_nodata(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                uint16_t qtype, const wire::Name& zone);
/// An answer synthesised from a wildcard (RFC 4035 §5.3.4): the RRSIG's Labels field
/// `rrsig_labels` is smaller than `qname`'s label count, and an NSEC must cover the next
/// closer name (the wildcard's parent plus one label of `qname`), so that no closer match
/// exists. Proven or NotProven.
DenialVerdict nsec_prove_wildcard_answer(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                         int rrsig_labels, const wire::Name& zone);
/// A referral to an unsigned child (RFC 4035 §5.2): the NSEC at `delegation` has NS and
/// neither DS nor SOA (RFC 6840 §4.4). Proven or NotProven.
DenialVerdict nsec_prove_insecure_delegation(std::span<const NsecRecord> nsecs,
                                             const wire::Name& delegation, const wire::Name& zone);

// --- NSEC3 (RFC 5155) ---
//
// Only records that RFC 5155 §8.1 and §8.2 let count are used: hash algorithm 1, flags 0 or 1,
// a 20-octet next hash, an owner one label below `zone` whose label is 32 base32hex
// characters. Records are grouped by their parameters (iterations, salt) and a proof is
// tried on each group: a zone may be between two chains. A group with more iterations than
// `max_iterations` is never hashed (RFC 9276 §3.2).

/// Whether an NSEC3 whose owner hash is `owner` and next hash `next` covers `hash`: strictly
/// between them, wrapping around at the last record of the chain (RFC 5155 §3.1.7).
bool nsec3_covers(std::span<const uint8_t> owner, std::span<const uint8_t> next,
                  std::span<const uint8_t> hash) noexcept;
/// The hash an NSEC3's owner name holds: its first label, base32hex (RFC 5155 §3), when the
/// owner is one label below `zone` and the label decodes to 20 octets.
std::optional<Nsec3Hash> nsec3_owner_hash(const wire::Name& owner, const wire::Name& zone);

/// The closest encloser proof of RFC 5155 §8.3, for the names it names. Both names are the
/// root unless the verdict is Proven or ProvenInsecure.
struct ClosestEncloser {
  /// Proven, ProvenInsecure (the next closer name's cover has Opt-Out), or why not.
  DenialVerdict verdict = DenialVerdict::NotProven;
  wire::Name closest;      ///< the longest existing ancestor of the name (an NSEC3 matches it)
  wire::Name next_closer;  ///< the closest encloser plus one label (an NSEC3 covers it)
};
/// RFC 5155 §8.3: walking up from `qname`, the first ancestor an NSEC3 matches is the closest
/// encloser, and an NSEC3 must cover the name one label below it. `qname` itself matching is
/// NotProven (it exists), and so is a closest encloser with DNAME, or with NS and no SOA
/// (RFC 6840 §4.1: `qname` would lie beyond a zone cut).
ClosestEncloser nsec3_closest_encloser(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                       const wire::Name& zone, HashBudget& budget,
                                       uint16_t max_iterations = kDefaultMaxNsec3Iterations);
/// NXDOMAIN (RFC 5155 §8.4): a closest encloser proof, and an NSEC3 covering the wildcard at
/// the closest encloser.
DenialVerdict nsec3_prove_nxdomain(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                   const wire::Name& zone, HashBudget& budget,
                                   uint16_t max_iterations = kDefaultMaxNsec3Iterations);
/// NODATA for `qtype` at `qname`: an NSEC3 matching `qname` without `qtype` or CNAME (RFC 5155
/// §8.5; an NSEC3 with NS and no SOA only for DS, RFC 6840 §4.1; for DS, one with SOA is the
/// child's and proves nothing, except at the root); for DS without a match, a closest
/// encloser proof whose next closer cover has Opt-Out, ProvenInsecure (§8.6); otherwise a
/// wildcard NODATA (§8.7): a closest encloser proof and an NSEC3 matching the wildcard at the
/// closest encloser without `qtype` or CNAME.
DenialVerdict nsec3_prove_nodata(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                 uint16_t qtype, const wire::Name& zone, HashBudget& budget,
                                 uint16_t max_iterations = kDefaultMaxNsec3Iterations);
/// An answer synthesised from a wildcard (RFC 5155 §8.8): an NSEC3 covers the next closer
/// name, `qname` cut to `rrsig_labels` + 1 labels.
DenialVerdict nsec3_prove_wildcard_answer(std::span<const Nsec3Record> nsec3s,
                                          const wire::Name& qname, int rrsig_labels,
                                          const wire::Name& zone, HashBudget& budget,
                                          uint16_t max_iterations = kDefaultMaxNsec3Iterations);
/// A referral to an unsigned child (RFC 5155 §8.9): an NSEC3 matching `delegation` with NS
/// and neither DS nor SOA (RFC 6840 §4.4), Proven; or a closest encloser proof for it whose
/// next closer cover has Opt-Out, ProvenInsecure.
DenialVerdict nsec3_prove_insecure_delegation(std::span<const Nsec3Record> nsec3s,
                                              const wire::Name& delegation, const wire::Name& zone,
                                              HashBudget& budget,
                                              uint16_t max_iterations = kDefaultMaxNsec3Iterations);

}  // namespace hg::dnssec
