// Connection admission for the stream listeners (DNS over TCP in tcp_listener.h, the metrics
// endpoint through stream_server.h): who may connect at all, how many connections one source
// may hold, and what happens when there is no room — so that one host, allowed or not,
// cannot keep a listener to itself (docs/architecture.md §5, "Connection admission").
//
// At accept, in this order:
//   1. a peer outside the listener's allow list is closed at once with a reset (nothing read,
//      no slot held) — counted `not_allowed`;
//   2. a source already holding max_per_source connections (counted `per_source_limit`) has
//      its own oldest idle connection closed to make room; with none idle the new connection
//      is closed (`no_room`);
//   3. a full table has its oldest idle connection closed (RFC 7766 §6.2.3: "close the oldest
//      idle connections first"); with none idle the new connection is closed (`no_room`);
//   4. out of descriptors (EMFILE/ENFILE) with a connection waiting — counted `fd_limit` —
//      the oldest idle connection is closed and the accept tried again; with none idle,
//      accepting pauses for 100 ms (the connection waits in the kernel's backlog) so a
//      level-triggered listener cannot spin.
// An evicted connection is counted `evicted_idle`. "Idle" means nothing of ours is pending
// on it: no query being resolved, no answer waiting to be sent. "Oldest" means the longest
// since it last did anything.
//
// A source is an IPv4 address (also when it arrives IPv4-mapped on an IPv6 socket) or the
// /64 of an IPv6 address: one host is normally given a whole /64 (SLAAC, privacy
// addresses), so counting by /128 would let it take as many slots as it has addresses.
// Anything else (a unix socket peer) is one source.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

#include "resolver/net/endpoint.h"

namespace hg::resolver {

/// What the admission of one listener (or every listener of one kind) did, for metrics and
/// `hourglass-ctl stats`. Written by the listeners' loop threads, read by anyone.
struct ConnCounters {
  std::atomic<uint64_t> not_allowed{0};       ///< closed at accept: outside the allow list
  std::atomic<uint64_t> no_room{0};           ///< closed at accept: full, nothing idle to close
  std::atomic<uint64_t> evicted_idle{0};      ///< idle connections closed to make room
  std::atomic<uint64_t> per_source_limit{0};  ///< accepts from a source at its limit
  std::atomic<uint64_t> fd_limit{0};          ///< accepts that failed with EMFILE/ENFILE
  std::atomic<int64_t> open{0};               ///< connections open now (a gauge)

  void add(std::atomic<uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
};

/// The key a source's connections are counted under (see the file comment).
struct SourceKey {
  std::array<uint8_t, 9> bytes{};  ///< [0] family tag, then 4 (IPv4) or 8 (IPv6 /64) bytes
  friend bool operator==(const SourceKey&, const SourceKey&) = default;
};
SourceKey source_key(const sockaddr* sa) noexcept;

struct SourceKeyHash {
  std::size_t operator()(const SourceKey& k) const noexcept;
};

/// Connections held per source, for the per-source limit.
class SourceCounts {
 public:
  unsigned count(const SourceKey& k) const noexcept;
  void add(const SourceKey& k);
  void remove(const SourceKey& k) noexcept;
  std::size_t sources() const noexcept { return counts_.size(); }

 private:
  std::unordered_map<SourceKey, unsigned, SourceKeyHash> counts_;
};

/// Whether `peer` is in `allow`; an empty list allows everyone. A null or non-IP peer (a unix
/// socket) is allowed only by an empty list.
bool peer_allowed(std::span<const Cidr> allow, const sockaddr* peer) noexcept;

/// Whether a connection waits to be accepted on the listening socket `fd` (poll, no
/// descriptor needed): accept() reports EMFILE even when none does.
bool connection_pending(int fd) noexcept;

/// Closes `fd` with a reset (SO_LINGER 0): for a connection refused at accept, so it leaves
/// no TIME_WAIT behind and the client learns at once.
void close_with_reset(int fd) noexcept;

/// The process's descriptor limit (RLIMIT_NOFILE) before and after raise_fd_limit().
struct FdLimit {
  uint64_t before = 0;  ///< the soft limit found
  uint64_t now = 0;     ///< the soft limit after raising it
  uint64_t hard = 0;
};
/// Raises the soft descriptor limit to `wanted` when it is lower, as far as the hard limit
/// allows (never lowers it). A daemon started with the usual soft limit of 1024 would
/// otherwise run out at four full TCP tables.
FdLimit raise_fd_limit(uint64_t wanted) noexcept;

/// `ConnCounters` as `hourglass-ctl stats` lines, each key prefixed with `prefix` (e.g.
/// "tcp."), and as Prometheus samples with label listener="`listener`" (the # HELP and
/// # TYPE lines come from conn_metrics_families()).
std::string conn_stats_lines(const ConnCounters& c, std::string_view prefix);
/// The connection families for every (listener, counters) pair given.
struct NamedConnCounters {
  std::string_view listener;
  const ConnCounters* counters;
};
std::string conn_metrics_families(std::span<const NamedConnCounters> listeners);

}  // namespace hg::resolver
