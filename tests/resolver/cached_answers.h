// Answers built for the resolver's tests, and put into a cache as the query path would: one
// copy of what the control, metrics, warm-restart and fleet tests each need.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "cache/cache.h"
#include "cache/key.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"
#include "wire/name.h"

namespace hg::resolver {

/// A response (ID 0, flags QR RD RA) to `name` A with one A record per TTL given: 192.0.2.1,
/// 192.0.2.2, ... in order.
inline wire::test::Bytes a_response(std::string_view name,
                                    std::initializer_list<uint32_t> ttls = {300}) {
  wire::test::PacketBuilder b;
  b.id(0).flags(0x8180).question(name, 1);
  uint8_t last = 1;
  for (uint32_t ttl : ttls)
    b.rr(0, name, 1, ttl, wire::test::Bytes{192, 0, 2, last++});
  return b.build();
}

/// The cache key of a query for `name` (class IN).
inline cache::CacheKey query_key(std::string_view name, wire::RRType type = wire::RRType::A,
                                 bool dnssec_ok = false, bool cd = false) {
  return cache::CacheKey::make(wire::Name::from_text(name).value(), type, 1, dnssec_ok, cd);
}

/// Inserts `response` (an answer to `name` A) into `cache` at `now`; a test failure unless it
/// parses and is cached.
inline void cache_answer(cache::Cache& cache, std::string_view name,
                         const wire::test::Bytes& response, cache::Time now,
                         bool dnssec_ok = false) {
  wire::Message m;
  ASSERT_TRUE(m.parse(response, wire::ParseMode::Strict).has_value());
  ASSERT_EQ(cache.insert(query_key(name, wire::RRType::A, dnssec_ok), m, now),
            cache::InsertOutcome::Cached);
}

}  // namespace hg::resolver
