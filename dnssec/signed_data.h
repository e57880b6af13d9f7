// What an RRSIG signs (RFC 4034 §3.1.8.1): its own RDATA up to the signature, with the
// signer's name in canonical form, followed by every record of the RRset in canonical form
// (RFC 4034 §6.2), in canonical order (§6.3):
//
//   owner | type | class | original TTL | RDLENGTH | RDATA   (for each record, sorted)
//
// where the owner is lowercased and, for a wildcard expansion (the RRSIG's Labels field
// smaller than the owner's label count), is "*." followed by the owner's rightmost Labels
// labels (§3.1.8.1, RFC 4035 §5.3.2); names inside the RDATA of the types RFC 4034 §6.2
// lists (as RFC 6840 §5.1 amends it: not NSEC's) are uncompressed and lowercased; and
// duplicate records are left out (§6.3).
//
// canonical_rdata() gives the canonical RDATA of one record of a parsed message; a type whose
// RDATA holds names this project does not decode (RP, AFSDB, NAPTR, ... in §6.2's list) is
// refused, so the caller can treat the RRset as one it cannot check rather than check it
// wrongly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wire/message.h"
#include "wire/name.h"

namespace hg::dnssec {

/// The fields of an RRSIG RDATA (RFC 4034 §3.1). The spans point into the RDATA parsed.
struct Rrsig {
  uint16_t type_covered = 0;
  uint8_t algorithm = 0;
  uint8_t labels = 0;
  uint32_t original_ttl = 0;
  uint32_t expiration =
      0;  ///< seconds since 1970, modulo 2^32 (RFC 4034 §3.1.5: serial arithmetic)
  uint32_t inception = 0;
  uint16_t key_tag = 0;
  wire::Name signer;
  std::span<const uint8_t> signature;
};

/// Parses an RRSIG RDATA; nullopt when it is too short, its signer's name is not a valid
/// uncompressed name (§3.1.7 forbids compression), or the signature is empty.
std::optional<Rrsig> parse_rrsig(std::span<const uint8_t> rdata);

/// The canonical RDATA of record `rr` of `m` (names in the §6.2 types uncompressed and
/// lowercased); nullopt for a type with names this does not decode, or malformed RDATA.
std::optional<std::vector<uint8_t>> canonical_rdata(const wire::Message& m,
                                                    const wire::RecordView& rr);

/// The bytes `sig` signs for the RRset of `owner`, `type` and `klass` whose records have the
/// canonical RDATAs `rdatas` (any order; sorted and deduplicated here). nullopt when the
/// RRSIG's Labels field is larger than the owner's label count (it cannot cover this owner).
std::optional<std::vector<uint8_t>> signed_data(const Rrsig& sig, const wire::Name& owner,
                                                uint16_t type, uint16_t klass,
                                                std::vector<std::vector<uint8_t>> rdatas);

}  // namespace hg::dnssec
