#include "resolver/query/fair_share.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "base/bytes.h"
#include "cache/key.h"

namespace hg::resolver {

namespace {

// Kinds of source, the tag's top byte (never 0, so no tag is 0).
constexpr uint64_t kIpv4Block = 1;     // an IPv4 /24
constexpr uint64_t kIpv4Loopback = 2;  // one 127.0.0.0/8 address
constexpr uint64_t kIpv6Block = 3;     // an IPv6 /56
constexpr uint64_t kIpv6Loopback = 4;  // ::1

uint64_t ipv4_source(const uint8_t* a) {
  const uint64_t addr = base::load_u32(a);
  if (a[0] == 127) return (kIpv4Loopback << 56) | addr;
  return (kIpv4Block << 56) | (addr >> 8);
}

}  // namespace

uint64_t client_source(const sockaddr* peer) noexcept {
  if (peer == nullptr) return 0;
  if (peer->sa_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, peer, sizeof sin);
    return ipv4_source(reinterpret_cast<const uint8_t*>(&sin.sin_addr));
  }
  if (peer->sa_family != AF_INET6) return 0;
  sockaddr_in6 sin6;
  std::memcpy(&sin6, peer, sizeof sin6);
  const uint8_t* a = sin6.sin6_addr.s6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr)) return ipv4_source(a + 12);
  if (IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr)) return kIpv6Loopback << 56;
  uint64_t prefix = 0;  // the first 7 bytes: the /56
  for (int i = 0; i < 7; ++i)
    prefix = (prefix << 8) | a[i];
  return (kIpv6Block << 56) | prefix;
}

uint64_t zone_tag(const wire::Name& qname) noexcept {
  const auto w = qname.wire();
  if (w.empty() || w[0] == 0) return 0;  // the root
  const std::size_t parent = std::size_t{w[0]} + 1;
  // The parent must have a label of its own: not the root (a top-level name).
  if (parent >= w.size() || w[parent] == 0) return 0;
  const uint64_t h = cache::seeded_hash(w.subspan(parent));
  return h == 0 ? 1 : h;
}

ClientRateLimit::ClientRateLimit(uint32_t rate) {
  if (rate == 0) return;
  interval_us_ = std::max<int64_t>(1, 1'000'000 / int64_t{rate});
  burst_us_ = 1'000'000;
  slots_ = std::make_unique<std::atomic<int64_t>[]>(kSlots);
  for (std::size_t i = 0; i < kSlots; ++i)
    slots_[i].store(0, std::memory_order_relaxed);
}

bool ClientRateLimit::allow(uint64_t source, MonoTime now) noexcept {
  if (interval_us_ == 0) return true;
  uint8_t bytes[8];
  std::memcpy(bytes, &source, sizeof bytes);
  std::atomic<int64_t>& slot = slots_[cache::seeded_hash(bytes) % kSlots];
  const int64_t now_us = ms_since_epoch(now) * 1000;
  int64_t tat = slot.load(std::memory_order_relaxed);
  // A few tries against other workers' updates of the same slot; then the query passes
  // (it would have been close to the rate anyway, and the loop stays bounded).
  for (int tries = 0; tries < 4; ++tries) {
    const int64_t next = std::max(tat, now_us) + interval_us_;
    if (next - now_us > burst_us_) return false;
    if (slot.compare_exchange_weak(tat, next, std::memory_order_relaxed)) return true;
  }
  return true;
}

}  // namespace hg::resolver
