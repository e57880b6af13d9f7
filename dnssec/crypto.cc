#include "dnssec/crypto.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <array>
#include <memory>

#include "base/bytes.h"

namespace hg::dnssec {

namespace {

// RFC 3110 allows 512 to 4096 bits; more would let a zone make every verification as dear
// as it likes (a verification's cost grows with the square of the modulus).
constexpr std::size_t kMinRsaModulus = 512 / 8;
constexpr std::size_t kMaxRsaModulus = 4096 / 8;
// The public exponent is 3 or 65537 in practice; a long one makes verification dear too.
constexpr std::size_t kMaxRsaExponent = 8;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const noexcept { BN_free(p); }
};
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* p) const noexcept { OSSL_PARAM_BLD_free(p); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* p) const noexcept { OSSL_PARAM_free(p); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* p) const noexcept { ECDSA_SIG_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// A key made from OSSL_PARAMs by the provider of `type` ("RSA", "EC").
Pkey key_from_params(const char* type, const OSSL_PARAM* params) {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, const_cast<OSSL_PARAM*>(params)) <= 0)
    return nullptr;
  return Pkey(key);
}

// RFC 3110 §2: exponent length (one octet, or zero and then two octets), exponent, modulus.
Pkey rsa_key(std::span<const uint8_t> k) {
  if (k.empty()) return nullptr;
  std::size_t elen = k[0];
  std::size_t at = 1;
  if (elen == 0) {
    if (k.size() < 3) return nullptr;
    elen = base::load_u16(&k[1]);
    at = 3;
  }
  if (elen == 0 || elen > kMaxRsaExponent || k.size() < at + elen) return nullptr;
  const auto modulus = k.subspan(at + elen);
  if (modulus.size() < kMinRsaModulus || modulus.size() > kMaxRsaModulus || modulus[0] == 0)
    return nullptr;
  std::unique_ptr<BIGNUM, BnFree> e(BN_bin2bn(k.data() + at, static_cast<int>(elen), nullptr));
  std::unique_ptr<BIGNUM, BnFree> n(
      BN_bin2bn(modulus.data(), static_cast<int>(modulus.size()), nullptr));
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!e || !n || !bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1)
    return nullptr;
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  if (!params) return nullptr;
  return key_from_params("RSA", params.get());
}

// RFC 6605 §4: the point's x and y, each `half` octets (no 0x04 prefix on the wire).
Pkey ec_key(std::span<const uint8_t> k, const char* group, std::size_t half) {
  if (k.size() != 2 * half) return nullptr;
  std::array<uint8_t, 1 + 2 * 48> point{};
  point[0] = 0x04;  // uncompressed (SEC 1 §2.3.3)
  std::copy(k.begin(), k.end(), point.begin() + 1);
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       1 + 2 * half) != 1)
    return nullptr;
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  if (!params) return nullptr;
  return key_from_params("EC", params.get());
}

// RFC 6605 §4: r | s, each `half` octets, as the DER ECDSA-Sig-Value OpenSSL verifies.
std::vector<uint8_t> ecdsa_der(std::span<const uint8_t> sig, std::size_t half) {
  if (sig.size() != 2 * half) return {};
  std::unique_ptr<ECDSA_SIG, EcdsaSigFree> s(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(sig.data(), static_cast<int>(half), nullptr);
  BIGNUM* ss = BN_bin2bn(sig.data() + half, static_cast<int>(half), nullptr);
  if (!s || r == nullptr || ss == nullptr || ECDSA_SIG_set0(s.get(), r, ss) != 1) {
    BN_free(r);
    BN_free(ss);
    return {};
  }
  const int len = i2d_ECDSA_SIG(s.get(), nullptr);
  if (len <= 0) return {};
  std::vector<uint8_t> der(static_cast<std::size_t>(len));
  uint8_t* p = der.data();
  if (i2d_ECDSA_SIG(s.get(), &p) != len) return {};
  return der;
}

VerifyResult verify_with(EVP_PKEY* key, const EVP_MD* md, std::span<const uint8_t> data,
                         std::span<const uint8_t> sig) {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) != 1)
    return VerifyResult::BadKey;
  return EVP_DigestVerify(ctx.get(), sig.data(), sig.size(), data.data(), data.size()) == 1
             ? VerifyResult::Valid
             : VerifyResult::Invalid;
}

const EVP_MD* digest_of(uint8_t digest_type) noexcept {
  switch (static_cast<DigestType>(digest_type)) {
    case DigestType::Sha1:
      return EVP_sha1();
    case DigestType::Sha256:
      return EVP_sha256();
    case DigestType::Sha384:
      return EVP_sha384();
  }
  return nullptr;
}

}  // namespace

bool algorithm_supported(uint8_t algorithm) noexcept {
  switch (static_cast<Algorithm>(algorithm)) {
    case Algorithm::RsaSha256:
    case Algorithm::RsaSha512:
    case Algorithm::EcdsaP256Sha256:
    case Algorithm::EcdsaP384Sha384:
    case Algorithm::Ed25519:
    case Algorithm::Ed448:
      return true;
  }
  return false;
}

bool digest_supported(uint8_t digest_type) noexcept {
  return digest_of(digest_type) != nullptr;
}

uint16_t key_tag(std::span<const uint8_t> rdata) noexcept {
  // RFC 4034 Appendix B: the RDATA as 16-bit big-endian words, summed with the carry
  // folded in once.
  uint32_t ac = 0;
  for (std::size_t i = 0; i < rdata.size(); ++i)
    ac += (i & 1) != 0 ? rdata[i] : uint32_t{rdata[i]} << 8;
  ac += (ac >> 16) & 0xffff;
  return static_cast<uint16_t>(ac & 0xffff);
}

std::optional<std::vector<uint8_t>> ds_digest(const wire::Name& owner,
                                              std::span<const uint8_t> dnskey_rdata,
                                              uint8_t digest_type) {
  const EVP_MD* md = digest_of(digest_type);
  if (md == nullptr) return std::nullopt;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  const wire::Name canonical = owner.lowercased();  // RFC 4034 §6.2
  std::vector<uint8_t> out(static_cast<std::size_t>(EVP_MD_get_size(md)));
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), canonical.wire().data(), canonical.wire().size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), dnskey_rdata.data(), dnskey_rdata.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != out.size())
    return std::nullopt;
  return out;
}

DsMatch ds_matches(const wire::Name& owner, std::span<const uint8_t> dnskey_rdata,
                   std::span<const uint8_t> ds_rdata) {
  // DS RDATA: key tag (2), algorithm (1), digest type (1), digest (RFC 4034 §5.1).
  if (ds_rdata.size() < 4 || dnskey_rdata.size() < 4) return DsMatch::Malformed;
  const uint16_t tag = base::load_u16(&ds_rdata[0]);
  if (tag != key_tag(dnskey_rdata) || ds_rdata[2] != dnskey_rdata[3]) return DsMatch::Mismatch;
  if (!digest_supported(ds_rdata[3])) return DsMatch::UnsupportedDigest;
  const auto digest = ds_digest(owner, dnskey_rdata, ds_rdata[3]);
  if (!digest) return DsMatch::UnsupportedDigest;
  const auto want = ds_rdata.subspan(4);
  return want.size() == digest->size() && std::equal(want.begin(), want.end(), digest->begin())
             ? DsMatch::Match
             : DsMatch::Mismatch;
}

VerifyResult verify(uint8_t algorithm, std::span<const uint8_t> public_key,
                    std::span<const uint8_t> data, std::span<const uint8_t> signature) {
  switch (static_cast<Algorithm>(algorithm)) {
    case Algorithm::RsaSha256:
    case Algorithm::RsaSha512: {
      Pkey key = rsa_key(public_key);
      if (!key) return VerifyResult::BadKey;
      const EVP_MD* md = algorithm == 8 ? EVP_sha256() : EVP_sha512();
      return verify_with(key.get(), md, data, signature);
    }
    case Algorithm::EcdsaP256Sha256:
    case Algorithm::EcdsaP384Sha384: {
      const bool p256 = algorithm == 13;
      const std::size_t half = p256 ? 32 : 48;
      Pkey key = ec_key(public_key, p256 ? "prime256v1" : "secp384r1", half);
      if (!key) return VerifyResult::BadKey;
      const std::vector<uint8_t> der = ecdsa_der(signature, half);
      if (der.empty()) return VerifyResult::Invalid;
      return verify_with(key.get(), p256 ? EVP_sha256() : EVP_sha384(), data, der);
    }
    case Algorithm::Ed25519:
    case Algorithm::Ed448: {
      const bool ed25519 = algorithm == 15;
      if (public_key.size() != (ed25519 ? 32u : 57u)) return VerifyResult::BadKey;
      if (signature.size() != (ed25519 ? 64u : 114u)) return VerifyResult::Invalid;
      Pkey key(EVP_PKEY_new_raw_public_key(ed25519 ? EVP_PKEY_ED25519 : EVP_PKEY_ED448, nullptr,
                                           public_key.data(), public_key.size()));
      if (!key) return VerifyResult::BadKey;
      return verify_with(key.get(), nullptr, data, signature);  // EdDSA hashes itself
    }
  }
  return VerifyResult::UnsupportedAlgorithm;
}

}  // namespace hg::dnssec
