// CacheKey: what makes two queries share one cached answer.
//
// The key is the lowercased qname (RFC 4343: names compare without ASCII case), the qtype,
// the qclass, the DO bit (a DNSSEC-aware client gets RRSIGs, a plain one does not) and the CD
// bit (a client that disabled checking may get data a validating upstream would refuse).
// Never the transport, EDNS cookies, the client's payload size or any other option: a TCP
// retry after TC=1, or a query with a fresh cookie, must hit the same entry.
//
// The hash is SipHash-1-3 under a per-process random key, so a random-subdomain flood cannot
// aim names at one hash bucket or one shard (the reason Rust's HashMap uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/message.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::cache {

struct CacheKey {
  wire::Name qname;  ///< lowercased
  wire::RRType qtype = wire::RRType::A;
  uint16_t qclass = 1;
  bool dnssec_ok = false;          ///< the client's EDNS DO bit
  bool checking_disabled = false;  ///< the client's CD bit
  uint64_t hash = 0;               ///< seeded hash of all of the above

  /// Builds a key; `qname` may be in any letter case.
  static CacheKey make(const wire::Name& qname, wire::RRType qtype, uint16_t qclass, bool dnssec_ok,
                       bool checking_disabled) noexcept;

  /// The key of a parsed client query: its first question, the DO bit of its OPT record (if
  /// any) and the CD bit of its header. Precondition: the query has at least one question.
  static CacheKey from_query(const wire::Message& query) noexcept;

  friend bool operator==(const CacheKey& a, const CacheKey& b) noexcept {
    return a.hash == b.hash && a.qtype == b.qtype && a.qclass == b.qclass &&
           a.dnssec_ok == b.dnssec_ok && a.checking_disabled == b.checking_disabled &&
           a.qname.identical(b.qname);
  }
};

/// The hash function object of a table keyed by CacheKey (the in-flight table, the fleet's
/// keys): the key's own seeded hash, so every such table is as flood-proof as the cache.
struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const noexcept {
    return static_cast<std::size_t>(k.hash);
  }
};

/// SipHash-1-3 of `bytes` under the process's random key (drawn once, at first use).
uint64_t seeded_hash(std::span<const uint8_t> bytes) noexcept;

/// SipHash-1-3 and SipHash-2-4 under the key (k0, k1) — k0 is the first 8 key bytes read
/// little-endian. seeded_hash is siphash13 under the process's key; these exist so the
/// tests can check the implementation against published reference vectors.
uint64_t siphash13(uint64_t k0, uint64_t k1, std::span<const uint8_t> bytes) noexcept;
uint64_t siphash24(uint64_t k0, uint64_t k1, std::span<const uint8_t> bytes) noexcept;

/// True when the uncompressed, lowercased wire name `name` equals `zone` or lies below it
/// (label-aligned suffix: "www.example.com" is below "example.com", "badexample.com" is not).
bool wire_at_or_below(std::span<const uint8_t> name, std::span<const uint8_t> zone) noexcept;

}  // namespace hg::cache
