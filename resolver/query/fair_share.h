// Fair shares between clients (docs/security.md, "Fair shares of the in-flight table"): what a
// client's queries are counted under (client_source), what zone a name is counted under
// (zone_tag), and the optional per-source query rate limit (ClientRateLimit, --client-rate).
// The in-flight table's shares themselves are in inflight.h.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "resolver/net/event_loop.h"
#include "wire/name.h"

namespace hg::resolver {

/// The source a client's queries count under, as a non-zero tag; 0 when `peer` is null or not
/// IP. An IPv4 address counts as its /24 and an IPv6 address as its /56: the block one
/// customer, host or small network usually holds, so a client cannot take more shares by
/// hopping addresses inside it. Loopback (127.0.0.0/8 and ::1) counts per address: everything
/// on the host itself is one operator's, and local programs (and the tests) that want apart
/// shares bind apart loopback addresses. An IPv4-mapped IPv6 address counts as its IPv4.
/// The tag is the prefix itself, with its kind in the top byte, so distinct sources never
/// share a tag.
uint64_t client_source(const sockaddr* peer) noexcept;

/// The zone a query name counts under for the per-zone cap, as a non-zero tag (seeded hash,
/// so a client cannot aim names at another zone's tag): the name minus its first label
/// ("x7f3.example.com" counts under "example.com"). A random-subdomain flood varies the first
/// label, so all of it lands in one zone. 0 (not counted) for the root and top-level names.
/// `qname` must be lowercased (a cache key's name).
uint64_t zone_tag(const wire::Name& qname) noexcept;

/// --client-rate: at most `rate` queries per second from one source (client_source()), with a
/// burst of one second's worth. A GCRA (virtual-scheduling token bucket) per slot of a fixed
/// array of atomics, so it takes no lock, allocates nothing after construction and holds the
/// same memory whatever the number of sources. Sources share a slot when their seeded hashes
/// collide (then they share one budget); with kSlots slots that needs thousands of busy
/// sources, and the seed keeps a client from choosing whose slot it lands in.
class ClientRateLimit {
 public:
  static constexpr std::size_t kSlots = 16384;
  /// `rate` 0: off (allow() is always true and nothing is allocated).
  explicit ClientRateLimit(uint32_t rate);
  bool enabled() const noexcept { return interval_us_ != 0; }
  /// Whether one more query from `source` at `now` is within the rate; false: refuse it.
  /// A refused query does not use up budget, so a source under the rate again is served.
  bool allow(uint64_t source, MonoTime now) noexcept;

 private:
  int64_t interval_us_ = 0;                        // 1e6 / rate
  int64_t burst_us_ = 0;                           // how far ahead of now a slot's schedule may run
  std::unique_ptr<std::atomic<int64_t>[]> slots_;  // each: the slot's theoretical arrival time
};

}  // namespace hg::resolver
