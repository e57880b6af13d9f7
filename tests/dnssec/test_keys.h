// Keys for the dnssec/ tests, made by OpenSSL on the spot, with their public key in the DNSKEY
// wire form of each algorithm and a signer that gives signatures in the RRSIG form: the
// tests then check dnssec/ against OpenSSL's own signing, not against itself.
#pragma once

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "dnssec/crypto.h"
#include "dnssec/rrset_check.h"
#include "dnssec/signed_data.h"

namespace hg::dnssec::test {

using Bytes = std::vector<uint8_t>;

class TestKey {
 public:
  /// A new key of DNSSEC algorithm `algorithm` (8, 10, 13, 14, 15, 16); throws if OpenSSL
  /// cannot make one (the test fails).
  explicit TestKey(uint8_t algorithm) : algorithm_(algorithm) {
    EVP_PKEY* k = nullptr;
    switch (algorithm) {
      case 8:
      case 10:
        k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
        break;
      case 13:
        k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
        break;
      case 14:
        k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384");
        break;
      case 15:
        k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
        break;
      case 16:
        k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED448");
        break;
      default:
        break;
    }
    if (k == nullptr) throw std::runtime_error("no key for this algorithm");
    key_.reset(k);
  }

  uint8_t algorithm() const noexcept { return algorithm_; }

  /// The DNSKEY Public Key field: RFC 3110 for RSA, x | y for ECDSA, the raw key for EdDSA.
  Bytes public_key() const {
    Bytes out;
    if (algorithm_ == 8 || algorithm_ == 10) {
      BIGNUM* n = nullptr;
      BIGNUM* e = nullptr;
      EVP_PKEY_get_bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_N, &n);
      EVP_PKEY_get_bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_E, &e);
      Bytes nb(static_cast<std::size_t>(BN_num_bytes(n))),
          eb(static_cast<std::size_t>(BN_num_bytes(e)));
      BN_bn2bin(n, nb.data());
      BN_bn2bin(e, eb.data());
      BN_free(n);
      BN_free(e);
      out.push_back(static_cast<uint8_t>(eb.size()));
      out.insert(out.end(), eb.begin(), eb.end());
      out.insert(out.end(), nb.begin(), nb.end());
    } else if (algorithm_ == 13 || algorithm_ == 14) {
      uint8_t point[1 + 2 * 48];
      std::size_t len = 0;
      EVP_PKEY_get_octet_string_param(key_.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point,
                                      sizeof point, &len);
      out.assign(point + 1, point + len);  // without the 0x04 of an uncompressed point
    } else {
      std::size_t len = 0;
      EVP_PKEY_get_raw_public_key(key_.get(), nullptr, &len);
      out.resize(len);
      EVP_PKEY_get_raw_public_key(key_.get(), out.data(), &len);
    }
    return out;
  }

  /// The DNSKEY RDATA: flags (a zone key, and SEP if `ksk`), protocol 3, algorithm, key.
  Bytes dnskey_rdata(bool ksk = false) const {
    Bytes out{1, static_cast<uint8_t>(ksk ? 1 : 0), 3, algorithm_};
    const Bytes k = public_key();
    out.insert(out.end(), k.begin(), k.end());
    return out;
  }

  /// A signature over `data` in the RRSIG form of the algorithm.
  Bytes sign(std::span<const uint8_t> data) const {
    const EVP_MD* md = algorithm_ == 8 || algorithm_ == 13 ? EVP_sha256()
                       : algorithm_ == 10                  ? EVP_sha512()
                       : algorithm_ == 14                  ? EVP_sha384()
                                                           : nullptr;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    std::size_t len = 0;
    if (EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, data.data(), data.size()) != 1)
      throw std::runtime_error("cannot sign");
    Bytes sig(len);
    if (EVP_DigestSign(ctx.get(), sig.data(), &len, data.data(), data.size()) != 1)
      throw std::runtime_error("cannot sign");
    sig.resize(len);
    if (algorithm_ != 13 && algorithm_ != 14) return sig;
    // DER ECDSA-Sig-Value -> r | s, each the curve's size (RFC 6605 §4).
    const std::size_t half = algorithm_ == 13 ? 32 : 48;
    const uint8_t* p = sig.data();
    ECDSA_SIG* s = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    if (s == nullptr) throw std::runtime_error("bad DER");
    Bytes rs(2 * half);
    BN_bn2binpad(ECDSA_SIG_get0_r(s), rs.data(), static_cast<int>(half));
    BN_bn2binpad(ECDSA_SIG_get0_s(s), rs.data() + half, static_cast<int>(half));
    ECDSA_SIG_free(s);
    return rs;
  }

 private:
  uint8_t algorithm_;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_{nullptr, EVP_PKEY_free};
};

/// When an RRSIG is valid and how it names its owner: what sign_rrset() needs besides the key.
struct SigSpec {
  uint32_t inception = 0;
  uint32_t expiration = 0;
  int labels = -1;            ///< the RRSIG's Labels field; -1: the owner's label count
  uint32_t original_ttl = 0;  ///< 0: the RRset's TTL
};

/// An RRSIG RDATA over `set` made by `key` for `signer`, as a signing zone would make it
/// (the signature over signed_data() of the RRSIG without its signature).
inline Bytes sign_rrset(const TestKey& key, bool ksk, const Rrset& set, const wire::Name& signer,
                        const SigSpec& spec) {
  Bytes r;
  auto u16 = [&](uint16_t v) {
    r.push_back(static_cast<uint8_t>(v >> 8));
    r.push_back(static_cast<uint8_t>(v));
  };
  auto u32 = [&](uint32_t v) {
    u16(static_cast<uint16_t>(v >> 16));
    u16(static_cast<uint16_t>(v));
  };
  u16(set.type);
  r.push_back(key.algorithm());
  r.push_back(static_cast<uint8_t>(spec.labels >= 0 ? spec.labels : set.owner.label_count()));
  u32(spec.original_ttl != 0 ? spec.original_ttl : set.ttl);
  u32(spec.expiration);
  u32(spec.inception);
  u16(key_tag(key.dnskey_rdata(ksk)));
  const wire::Name low = signer.lowercased();
  r.insert(r.end(), low.wire().begin(), low.wire().end());
  Bytes unsigned_rrsig = r;
  unsigned_rrsig.push_back(0);  // parse_rrsig() wants a signature: any byte, not signed
  const auto sig = parse_rrsig(unsigned_rrsig);
  if (!sig) throw std::runtime_error("cannot parse the RRSIG made");
  const auto data = signed_data(*sig, set.owner, set.type, set.klass, set.rdatas);
  if (!data) throw std::runtime_error("no signed data");
  const Bytes s = key.sign(*data);
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

}  // namespace hg::dnssec::test
