#include "resolver/net/conn_admission.h"

#include <fmt/core.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

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

Acceptor::Acceptor(EventLoop& loop, AcceptorSettings settings, AcceptorHost& host)
    : loop_(loop), settings_(std::move(settings)), host_(host) {}

Acceptor::~Acceptor() {
  stop();
  if (resume_timer_) loop_.cancel_timer(resume_timer_);
  if (fd_ >= 0) ::close(fd_);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_sub(static_cast<int64_t>(slots_.size()),
                                       std::memory_order_relaxed);
}

bool Acceptor::start(int listen_fd) {
  if (!loop_.add_fd(listen_fd, Interest::Read, [this](FdEvents) { on_accept(); })) return false;
  fd_ = listen_fd;
  accepting_ = true;
  return true;
}

void Acceptor::stop() {
  if (accepting_) loop_.remove_fd(fd_);
  accepting_ = false;
  stopped_ = true;
}

void Acceptor::release(int fd) noexcept {
  const auto it = slots_.find(fd);
  if (it == slots_.end()) return;
  sources_.remove(it->second.source);
  slots_.erase(it);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_sub(1, std::memory_order_relaxed);
}

void Acceptor::on_accept() {
  for (int i = 0; i < settings_.accepts_per_wakeup && accepting_; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd =
        ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EMFILE || err == ENFILE) {
        // accept() fails so whether or not a connection waits: only one that does counts.
        if (!connection_pending(fd_)) return;
        count(&ConnCounters::fd_limit);
        // Out of descriptors: one held by an idle connection is better spent on the new one
        // (which may be the only client that wants an answer).
        if (settings_.evict_idle && make_room(nullptr)) continue;
      }
      // Out of descriptors the connection stays in the backlog, and the level-triggered
      // listener would wake the loop at once, forever: stop accepting for a moment instead.
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) pause_accepting();
      return;
    }
    admit(fd, reinterpret_cast<const sockaddr*>(&ss), len);
  }
}

void Acceptor::pause_accepting() {
  if (!accepting_) return;
  loop_.remove_fd(fd_);
  accepting_ = false;
  resume_timer_ = loop_.add_timer(Millis{100}, [this] { resume_accepting(); });
}

void Acceptor::resume_accepting() {
  resume_timer_ = {};
  if (accepting_ || stopped_) return;
  accepting_ = loop_.add_fd(fd_, Interest::Read, [this](FdEvents) { on_accept(); });
}

void Acceptor::admit(int fd, const sockaddr* sa, socklen_t len) {
  if (!peer_allowed(settings_.allow, sa)) {
    // Nothing read, no slot held. (A DNS REFUSED is for UDP, query/admission.h.)
    close_with_reset(fd);
    count(&ConnCounters::not_allowed);
    return;
  }
  const SourceKey key = source_key(sa);
  if (settings_.max_per_source > 0 && sources_.count(key) >= settings_.max_per_source) {
    count(&ConnCounters::per_source_limit);
    if (!settings_.evict_idle || !make_room(&key)) {
      close_with_reset(fd);
      count(&ConnCounters::no_room);
      return;
    }
  }
  if (slots_.size() >= settings_.max_connections &&
      (!settings_.evict_idle || !make_room(nullptr))) {
    close_with_reset(fd);  // full of busy connections: refuse at once rather than queue
    count(&ConnCounters::no_room);
    return;
  }
  slots_.emplace(fd, Slot{key, next_serial_});
  sources_.add(key);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_add(1, std::memory_order_relaxed);
  // The host may read at once (a request that came with the handshake is handled now,
  // before the next accept of this wakeup could close the connection to make room), and
  // may even close it again: the slot is held from here on.
  if (!host_.open_connection(fd, sa, len, next_serial_++)) release(fd);
}

bool Acceptor::make_room(const SourceKey* only) {
  // A linear scan of at most max_connections, only when a limit is reached.
  int victim = -1;
  MonoTime victim_since{};
  uint64_t victim_serial = 0;
  for (const auto& [fd, slot] : slots_) {
    if (only != nullptr && !(slot.source == *only)) continue;
    const std::optional<MonoTime> since = host_.idle_since(fd);
    if (!since) continue;
    if (victim < 0 || *since < victim_since ||
        (*since == victim_since && slot.serial < victim_serial)) {
      victim = fd;
      victim_since = *since;
      victim_serial = slot.serial;
    }
  }
  if (victim < 0) return false;
  host_.evict(victim);
  release(victim);  // in case the host did not
  count(&ConnCounters::evicted_idle);
  return true;
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
