// Helpers shared by the cache tests: build upstream responses and client queries with the
// owned message model, and keep the bytes a wire::Message views alive beside it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/key.h"
#include "tests/wire/test_names.h"
#include "wire/edns.h"
#include "wire/header.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace hg::cache::testing {

using wire::Name;
using wire::OwnedMessage;
using wire::OwnedRecord;
using wire::RRType;

using wire::test::N;

/// "<prefix><i><suffix>", e.g. nm("host", 7, ".example") → "host7.example". (Built with
/// snprintf: GCC 12 at -O3 raises a false -Wrestrict on `"lit" + std::to_string(i)`, PR105329.)
inline std::string nm(const char* prefix, long i, const char* suffix) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, "%s%ld%s", prefix, i, suffix);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

inline OwnedRecord A(std::string_view owner, uint32_t ttl, uint8_t last_octet = 1) {
  return {N(owner), RRType::A, 1, ttl, wire::RdataA{{192, 0, 2, last_octet}}};
}
inline OwnedRecord AAAA(std::string_view owner, uint32_t ttl) {
  return {N(owner), RRType::AAAA, 1, ttl,
          wire::RdataAAAA{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}};
}
inline OwnedRecord CNAME(std::string_view owner, uint32_t ttl, std::string_view target) {
  return {N(owner), RRType::CNAME, 1, ttl, wire::RdataName{N(target)}};
}
inline OwnedRecord NS(std::string_view owner, uint32_t ttl, std::string_view target) {
  return {N(owner), RRType::NS, 1, ttl, wire::RdataName{N(target)}};
}
inline OwnedRecord SOA(std::string_view owner, uint32_t ttl, uint32_t minimum) {
  return {N(owner), RRType::SOA, 1, ttl,
          wire::RdataSOA{N("ns1.example.com"), N("hostmaster.example.com"), 2024010101, 7200, 900,
                         1209600, minimum}};
}

/// An upstream response (QR, RD, RA) to one question; records are added by the caller.
inline OwnedMessage response(std::string_view qname, RRType qtype = RRType::A,
                             wire::RCode rcode = wire::RCode::NoError) {
  OwnedMessage m;
  m.header.id = 0x4242;
  m.header.set(wire::flag::QR, true);
  m.header.set(wire::flag::RD, true);
  m.header.set(wire::flag::RA, true);
  m.questions.push_back({N(qname), qtype, 1});
  m.set_rcode(rcode);
  return m;
}

/// A client query, as the resolver would receive it.
inline OwnedMessage query(std::string_view qname, RRType qtype = RRType::A, bool edns = false,
                          bool dnssec_ok = false) {
  OwnedMessage m;
  m.header.id = 0x1234;
  m.header.set(wire::flag::RD, true);
  m.questions.push_back({N(qname), qtype, 1});
  if (edns) {
    m.edns = wire::OwnedEdns{};
    if (dnssec_ok) m.edns->flags = wire::kEdnsDoBit;
  }
  return m;
}

/// Wire bytes plus the parsed view over them (the view must not outlive the bytes: kept together).
struct Packet {
  std::vector<uint8_t> bytes;
  wire::Message msg;

  explicit Packet(const OwnedMessage& m) : bytes(wire::to_wire(m)) {
    auto st = msg.parse(bytes, wire::ParseMode::Lenient);
    EXPECT_TRUE(st.has_value());
  }
  explicit Packet(std::vector<uint8_t> b) : bytes(std::move(b)) {
    auto st = msg.parse(bytes, wire::ParseMode::Lenient);
    EXPECT_TRUE(st.has_value());
  }
  Packet(const Packet&) = delete;
  /// The first question's bytes, qname through QCLASS, as a client sent them.
  std::span<const uint8_t> question() const {
    const auto& q = msg.questions().front();
    return std::span<const uint8_t>(bytes).subspan(q.offset, q.end - q.offset);
  }
};

inline CacheKey key(std::string_view qname, RRType qtype = RRType::A, bool dnssec_ok = false) {
  return CacheKey::make(N(qname), qtype, 1, dnssec_ok, false);
}

/// Decodes a rendered response back into the owned model (this also proves it parses).
inline OwnedMessage decode(std::span<const uint8_t> bytes) {
  wire::Message m;
  auto st = m.parse(bytes, wire::ParseMode::Strict);
  EXPECT_TRUE(st.has_value());
  if (!st) return {};
  auto o = wire::to_owned(m);
  EXPECT_TRUE(o.has_value());
  return o ? *o : OwnedMessage{};
}

}  // namespace hg::cache::testing
