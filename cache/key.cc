// CacheKey construction and the seeded SipHash-1-3 behind it.
#include "cache/key.h"

#include <array>
#include <cstring>
#include <random>

#include "base/bytes.h"

namespace hg::cache {
namespace {

struct SipKey {
  uint64_t k0;
  uint64_t k1;
};

const SipKey& sip_key() noexcept {
  static const SipKey key = [] {
    std::random_device rd;
    auto draw = [&rd] { return (uint64_t{rd()} << 32) ^ uint64_t { rd() }; };
    return SipKey{draw(), draw()};
  }();
  return key;
}

constexpr uint64_t rotl(uint64_t x, int b) noexcept {
  return (x << b) | (x >> (64 - b));
}

struct SipState {
  uint64_t v0, v1, v2, v3;
  void round() noexcept {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
};

uint64_t load_le64(const uint8_t* p) noexcept {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

// SipHash-c-d (Aumasson and Bernstein): c compression rounds per 8-byte block, d finalisation
// rounds. The key cache uses 1-3; 2-4 shares every line and is what the published reference
// vectors cover, so the tests check both.
template <int C, int D>
uint64_t siphash(uint64_t k0, uint64_t k1, std::span<const uint8_t> bytes) noexcept {
  SipState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
             k1 ^ 0x7465646279746573ULL};
  const std::size_t n = bytes.size();
  const std::size_t whole = n & ~std::size_t{7};
  for (std::size_t i = 0; i < whole; i += 8) {
    const uint64_t m = load_le64(bytes.data() + i);
    s.v3 ^= m;
    for (int r = 0; r < C; ++r)
      s.round();
    s.v0 ^= m;
  }
  // The last block: the remaining bytes, little-endian, with the length's low byte on top.
  uint64_t last = uint64_t{n & 0xff} << 56;
  for (std::size_t i = whole; i < n; ++i)
    last |= uint64_t{bytes[i]} << (8 * (i - whole));
  s.v3 ^= last;
  for (int r = 0; r < C; ++r)
    s.round();
  s.v0 ^= last;
  s.v2 ^= 0xff;
  for (int r = 0; r < D; ++r)
    s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace

uint64_t siphash13(uint64_t k0, uint64_t k1, std::span<const uint8_t> bytes) noexcept {
  return siphash<1, 3>(k0, k1, bytes);
}

uint64_t siphash24(uint64_t k0, uint64_t k1, std::span<const uint8_t> bytes) noexcept {
  return siphash<2, 4>(k0, k1, bytes);
}

uint64_t seeded_hash(std::span<const uint8_t> bytes) noexcept {
  const SipKey& k = sip_key();
  return siphash<1, 3>(k.k0, k.k1, bytes);
}

CacheKey CacheKey::make(const wire::Name& qname, wire::RRType qtype, uint16_t qclass,
                        bool dnssec_ok, bool checking_disabled) noexcept {
  CacheKey k;
  k.qname = qname.lowercased();
  k.qtype = qtype;
  k.qclass = qclass;
  k.dnssec_ok = dnssec_ok;
  k.checking_disabled = checking_disabled;
  // Hash input: name wire | qtype | qclass | flags. The name is self-delimiting, so distinct
  // keys never produce the same input.
  std::array<uint8_t, wire::kMaxNameOctets + 5> buf;
  const auto w = k.qname.wire();
  std::memcpy(buf.data(), w.data(), w.size());
  std::size_t n = w.size();
  base::store_u16(&buf[n], static_cast<uint16_t>(qtype));
  base::store_u16(&buf[n + 2], qclass);
  buf[n + 4] = static_cast<uint8_t>((dnssec_ok ? 1 : 0) | (checking_disabled ? 2 : 0));
  k.hash = seeded_hash({buf.data(), n + 5});
  return k;
}

CacheKey CacheKey::from_query(const wire::Message& query) noexcept {
  const wire::Question& q = query.questions().front();
  const bool dnssec_ok = query.edns().has_value() && query.edns()->dnssec_ok();
  return make(q.name, q.type, q.klass, dnssec_ok, query.header().cd());
}

bool wire_at_or_below(std::span<const uint8_t> name, std::span<const uint8_t> zone) noexcept {
  if (zone.size() > name.size()) return false;
  // Walk the labels of `name`; a match must start on a label boundary.
  std::size_t p = 0;
  while (p < name.size()) {
    const std::size_t rest = name.size() - p;
    if (rest == zone.size()) return std::memcmp(name.data() + p, zone.data(), rest) == 0;
    if (rest < zone.size() || name[p] == 0) return false;
    p += std::size_t{name[p]} + 1;
  }
  return false;
}

}  // namespace hg::cache
