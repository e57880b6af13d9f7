#include "resolver/net/conn_admission.h"

#include <fmt/core.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace hg::resolver {

SourceKey source_key(const sockaddr* sa) noexcept {
  SourceKey k;
  if (sa == nullptr) return k;
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    k.bytes[0] = 4;
    std::memcpy(k.bytes.data() + 1, &in.sin_addr.s_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      k.bytes[0] = 4;  // the same source as its plain IPv4 form
      std::memcpy(k.bytes.data() + 1, in6.sin6_addr.s6_addr + 12, 4);
    } else {
      k.bytes[0] = 6;
      std::memcpy(k.bytes.data() + 1, in6.sin6_addr.s6_addr, 8);  // the /64
    }
  }
  return k;
}

std::size_t SourceKeyHash::operator()(const SourceKey& k) const noexcept {
  // FNV-1a: the keys are chosen by clients, but the table is bounded by the connection
  // limit, so a collision costs a few comparisons among at most that many entries.
  return static_cast<std::size_t>(base::fnv1a(k.bytes));
}

unsigned SourceCounts::count(const SourceKey& k) const noexcept {
  const auto it = counts_.find(k);
  return it == counts_.end() ? 0 : it->second;
}

void SourceCounts::add(const SourceKey& k) {
  ++counts_[k];
}

void SourceCounts::remove(const SourceKey& k) noexcept {
  const auto it = counts_.find(k);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

bool peer_allowed(std::span<const Cidr> allow, const sockaddr* peer) noexcept {
  if (allow.empty()) return true;
  return std::any_of(allow.begin(), allow.end(), [&](const Cidr& c) { return c.contains(peer); });
}

bool connection_pending(int fd) noexcept {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

void close_with_reset(int fd) noexcept {
  linger lg{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
}

FdLimit raise_fd_limit(uint64_t wanted) noexcept {
  FdLimit out;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return out;
  out.before = out.now = r.rlim_cur;
  out.hard = r.rlim_max;
  if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= wanted) return out;
  r.rlim_cur = r.rlim_max == RLIM_INFINITY ? wanted : std::min<rlim_t>(wanted, r.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &r) == 0) out.now = r.rlim_cur;
  return out;
}

namespace {
uint64_t get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}
}  // namespace

std::string conn_stats_lines(const ConnCounters& c, std::string_view prefix) {
  std::string out;
  auto line = [&](std::string_view key, auto value) {
    out += fmt::format("{}{} {}\n", prefix, key, value);
  };
  line("connections", std::max<int64_t>(0, c.open.load(std::memory_order_relaxed)));
  line("refused_not_allowed", get(c.not_allowed));
  line("refused_no_room", get(c.no_room));
  line("evicted_idle", get(c.evicted_idle));
  line("per_source_limit", get(c.per_source_limit));
  line("fd_limit", get(c.fd_limit));
  return out;
}

std::string conn_metrics_families(std::span<const NamedConnCounters> listeners) {
  std::string out;
  auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  family("hourglass_connections", "gauge",
         "Stream connections open, by listener (tcp: DNS over TCP; metrics: this endpoint).");
  for (const auto& l : listeners)
    out += fmt::format("hourglass_connections{{listener=\"{}\"}} {}\n", l.listener,
                       std::max<int64_t>(0, l.counters->open.load(std::memory_order_relaxed)));
  family("hourglass_connections_refused_total", "counter",
         "Connections closed at accept: not-allowed (outside the listener's allow list), "
         "no-room (the table or the source's share full of busy connections).");
  for (const auto& l : listeners) {
    out += fmt::format(
        "hourglass_connections_refused_total{{listener=\"{}\",reason=\"not-allowed\"}} {}\n",
        l.listener, get(l.counters->not_allowed));
    out += fmt::format(
        "hourglass_connections_refused_total{{listener=\"{}\",reason=\"no-room\"}} {}\n",
        l.listener, get(l.counters->no_room));
  }
  family("hourglass_connections_evicted_total", "counter",
         "Idle connections closed to make room for a new one (oldest idle first, RFC 7766 "
         "6.2.3).");
  for (const auto& l : listeners)
    out += fmt::format("hourglass_connections_evicted_total{{listener=\"{}\"}} {}\n", l.listener,
                       get(l.counters->evicted_idle));
  family("hourglass_connections_per_source_limit_total", "counter",
         "New connections from a source that already held its per-source limit.");
  for (const auto& l : listeners)
    out += fmt::format("hourglass_connections_per_source_limit_total{{listener=\"{}\"}} {}\n",
                       l.listener, get(l.counters->per_source_limit));
  family("hourglass_connections_fd_limit_total", "counter",
         "Accepts that found the process out of file descriptors (EMFILE/ENFILE).");
  for (const auto& l : listeners)
    out += fmt::format("hourglass_connections_fd_limit_total{{listener=\"{}\"}} {}\n", l.listener,
                       get(l.counters->fd_limit));
  return out;
}

}  // namespace hg::resolver
