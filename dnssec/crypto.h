// DNSSEC cryptography: the pieces a validator builds on, each checked against the RFCs'
// examples (tests/dnssec/crypto_test.cc) and against keys OpenSSL makes on the spot.
//
//  - key_tag(): the 16-bit tag of a DNSKEY RDATA (RFC 4034 Appendix B), by which an RRSIG or
//    a DS names its key. Tags collide (many keys, one tag): a validator must try every key
//    with the tag, within a budget (KeyTrap, CVE-2023-50387); this file only computes it.
//  - ds_digest() / ds_matches(): the digest of owner name and DNSKEY RDATA a DS record holds
//    (RFC 4034 §5.1.4; SHA-256 RFC 4509, SHA-384 RFC 6605). SHA-1 (digest type 1) is
//    computed too: RFC 8624 §3.3 says a validator MUST still accept it.
//  - verify(): one signature over one blob with one DNSKEY's public key, for the algorithms
//    RFC 8624 §3.1 says a validator MUST (or is RECOMMENDED to) support: RSA/SHA-256 (8),
//    RSA/SHA-512 (10), ECDSA P-256/SHA-256 (13), ECDSA P-384/SHA-384 (14), Ed25519 (15) and
//    Ed448 (16). Anything else is UnsupportedAlgorithm, which RFC 4035 §5.2 treats as
//    insecure, not bogus. RSA/SHA-1 (5, 7) is not offered, a choice: RFC 8624 §3.1 still
//    lists its validation as a MUST, but SHA-1 signatures can be forged by chosen-prefix
//    collisions, the IETF is deprecating them (draft-ietf-dnsop-must-not-sha1), and RHEL 9's
//    crypto policy already makes validators treat them as unsupported. The cost: the few zones
//    still signed with SHA-1 are insecure here (answered, without AD), never bogus.
//
// All through OpenSSL's libcrypto (already linked for DNS over TLS and the fleet's HMAC):
// EVP one-shot digests and EVP_DigestVerify. Every input is untrusted: lengths are checked
// before anything is read, and a key OpenSSL refuses is BadKey, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wire/name.h"

namespace hg::dnssec {

/// DNSSEC algorithm numbers (IANA registry, RFC 8624).
enum class Algorithm : uint8_t {
  RsaSha256 = 8,
  RsaSha512 = 10,
  EcdsaP256Sha256 = 13,
  EcdsaP384Sha384 = 14,
  Ed25519 = 15,
  Ed448 = 16,
};

/// DS digest types (IANA registry).
enum class DigestType : uint8_t {
  Sha1 = 1,
  Sha256 = 2,
  Sha384 = 4,
};

/// Whether verify() can check signatures of this algorithm number.
bool algorithm_supported(uint8_t algorithm) noexcept;
/// Whether ds_digest() can compute this digest type.
bool digest_supported(uint8_t digest_type) noexcept;

/// RFC 4034 Appendix B: the key tag of a DNSKEY RDATA (flags, protocol, algorithm, key).
uint16_t key_tag(std::span<const uint8_t> dnskey_rdata) noexcept;

/// The digest a DS record of `digest_type` holds for the DNSKEY RDATA at `owner`:
/// digest(canonical owner name | DNSKEY RDATA) (RFC 4034 §5.1.4). nullopt for a digest type
/// not supported, or when OpenSSL fails.
std::optional<std::vector<uint8_t>> ds_digest(const wire::Name& owner,
                                              std::span<const uint8_t> dnskey_rdata,
                                              uint8_t digest_type);

/// What a DS RDATA says against a DNSKEY RDATA at `owner`.
enum class DsMatch : uint8_t {
  Match,              ///< key tag, algorithm and digest agree
  Mismatch,           ///< the DS names another key, or its digest differs
  UnsupportedDigest,  ///< a digest type ds_digest() does not compute: says nothing
  Malformed,          ///< the DS RDATA is shorter than its fixed fields
};
DsMatch ds_matches(const wire::Name& owner, std::span<const uint8_t> dnskey_rdata,
                   std::span<const uint8_t> ds_rdata);

enum class VerifyResult : uint8_t {
  Valid,                 ///< the signature is good for the data under the key
  Invalid,               ///< it is not (or it is malformed for the algorithm)
  UnsupportedAlgorithm,  ///< an algorithm verify() does not do (RFC 4035 §5.2: insecure)
  BadKey,                ///< the public key cannot be a key of the algorithm
};

/// Checks `signature` (the RRSIG's Signature field) over `data` (what the RRSIG signs, see
/// signed_data.h) with `public_key` (the DNSKEY's Public Key field) of `algorithm`:
/// RFC 3110 §2 RSA keys (exponent length, exponent, modulus), RFC 6605 §4 ECDSA keys and
/// signatures (x | y; r | s, each of the curve's size), RFC 8080 §3 EdDSA keys and signatures.
VerifyResult verify(uint8_t algorithm, std::span<const uint8_t> public_key,
                    std::span<const uint8_t> data, std::span<const uint8_t> signature);

}  // namespace hg::dnssec
