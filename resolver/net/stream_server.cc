#include "resolver/net/stream_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hg::resolver {

namespace {
constexpr std::size_t kReadChunk = 4096;
constexpr int kAcceptsPerWakeup = 16;
constexpr int kReadsPerWakeup = 16;
}  // namespace

std::unique_ptr<StreamServer> StreamServer::start(EventLoop& loop, int listen_fd,
                                                  StreamServerSettings settings, Handler handler) {
  std::unique_ptr<StreamServer> s(
      new StreamServer(loop, listen_fd, std::move(settings), std::move(handler)));
  if (!loop.add_fd(listen_fd, Interest::Read, [p = s.get()](FdEvents) { p->on_accept(); })) {
    const int err = errno;
    s->fd_ = -1;  // the caller still owns the fd on failure
    errno = err;
    return nullptr;
  }
  s->accepting_ = true;
  return s;
}

StreamServer::StreamServer(EventLoop& loop, int fd, StreamServerSettings settings, Handler handler)
    : loop_(loop), fd_(fd), settings_(std::move(settings)), handler_(std::move(handler)) {}

StreamServer::~StreamServer() {
  for (auto& [fd, c] : conns_) {
    loop_.remove_fd(fd);
    if (c->idle_timer) loop_.cancel_timer(c->idle_timer);
    ::close(fd);
    if (settings_.counters != nullptr)
      settings_.counters->open.fetch_sub(1, std::memory_order_relaxed);
  }
  conns_.clear();
  if (resume_timer_) loop_.cancel_timer(resume_timer_);
  if (fd_ >= 0) {
    if (accepting_) loop_.remove_fd(fd_);
    ::close(fd_);
  }
}

void StreamServer::on_accept() {
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
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
        if (settings_.evict_idle && make_room(nullptr)) continue;
      }
      // Out of descriptors the connection stays in the backlog, and the level-triggered
      // listener would wake the loop at once, forever: stop accepting for a moment instead.
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) pause_accepting();
      return;
    }
    admit(fd, reinterpret_cast<const sockaddr*>(&ss));
  }
}

void StreamServer::pause_accepting() {
  if (!accepting_) return;
  loop_.remove_fd(fd_);
  accepting_ = false;
  resume_timer_ = loop_.add_timer(Millis{100}, [this] { resume_accepting(); });
}

void StreamServer::resume_accepting() {
  resume_timer_ = {};
  if (accepting_) return;
  accepting_ = loop_.add_fd(fd_, Interest::Read, [this](FdEvents) { on_accept(); });
}

void StreamServer::admit(int fd, const sockaddr* sa) {
  if (!peer_allowed(settings_.allow, sa)) {
    close_with_reset(fd);  // nothing read, no slot held
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
  if (conns_.size() >= settings_.max_connections &&
      (!settings_.evict_idle || !make_room(nullptr))) {
    close_with_reset(fd);  // over the limit: refuse at once rather than queue
    count(&ConnCounters::no_room);
    return;
  }
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->serial = next_serial_++;
  c->last_activity = loop_.now();
  c->waiting_since = c->last_activity;
  c->source = key;
  if (!loop_.add_fd(fd, Interest::Read, [this, fd](FdEvents ev) { on_events(fd, ev); })) {
    ::close(fd);
    return;
  }
  Conn& ref = *c;
  conns_.emplace(fd, std::move(c));
  sources_.add(key);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_add(1, std::memory_order_relaxed);
  arm_idle_timer(ref);
  // A request that came with the handshake is handled now, before the next accept of this
  // wakeup could close the connection to make room.
  on_events(fd, FdEvents{.readable = true});
}

bool StreamServer::make_room(const SourceKey* only) {
  // A linear scan of at most max_connections, only when a limit is reached.
  Conn* victim = nullptr;
  for (const auto& [fd, c] : conns_) {
    if (!c->waiting || c->close_after || (only != nullptr && !(c->source == *only))) continue;
    if (victim == nullptr || c->last_activity < victim->last_activity ||
        (c->last_activity == victim->last_activity && c->serial < victim->serial))
      victim = c.get();
  }
  if (victim == nullptr) return false;
  close_conn(victim->fd);
  count(&ConnCounters::evicted_idle);
  return true;
}

void StreamServer::on_events(int fd, FdEvents ev) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  // A reset (EPOLLERR), or a hang-up after the end of the stream was already read: nothing
  // can be sent any more. Close now rather than produce more of a dump for nobody, and so a
  // connection parked at Interest::None (epoll reports ERR/HUP regardless) cannot wake the
  // level-triggered loop on every iteration.
  if (ev.error || (ev.hangup && c.peer_closed)) {
    close_conn(fd);
    return;
  }
  if (ev.writable) flush(c);
  if (ev.readable || ev.hangup) read_some(c);
  fill_output(c);
  handle_input(c);
  fill_output(c);
  flush(c);
  settle(c);
}

void StreamServer::read_some(Conn& c) {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerWakeup && !c.peer_closed && c.fd >= 0; ++i) {
    if (c.in.size() >= settings_.max_request) return;
    const std::size_t room = std::min(sizeof buf, settings_.max_request - c.in.size());
    const ssize_t n = ::recv(c.fd, buf, room, MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buf, static_cast<std::size_t>(n));
      c.last_activity = loop_.now();
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    // End of input, or an error: nothing more will be read. Replies still go out if the
    // peer only shut down its sending side; a send error closes the connection.
    c.peer_closed = true;
  }
}

void StreamServer::handle_input(Conn& c) {
  while (!c.more && !c.close_after && !c.in.empty() &&
         c.out.size() - c.out_sent < settings_.high_water) {
    const bool full = c.in.size() >= settings_.max_request;
    const std::size_t before = c.out.size();
    Reply r = handler_(c.in, full, c.out);
    const std::size_t used = std::min(r.consumed, c.in.size());
    c.in.erase(0, used);
    if (r.close) c.close_after = true;
    if (r.more) c.more = std::move(r.more);
    if (used > 0 || c.out.size() != before || c.more) c.waiting = false;  // a request answered
    if (used == 0 && c.out.size() == before && !r.close && !r.more) {
      // Incomplete. A handler that neither answers nor closes a full buffer would leave the
      // connection stuck; close it instead.
      if (full) c.close_after = true;
      return;
    }
  }
}

void StreamServer::fill_output(Conn& c) {
  while (c.more && c.out.size() - c.out_sent < settings_.high_water) {
    const std::size_t before = c.out.size();
    if (!c.more(c.out)) {
      c.more = nullptr;
    } else if (c.out.size() == before) {
      break;  // a chunk of work with nothing to send yet (a drain scan): yield to the loop
    }
  }
}

void StreamServer::flush(Conn& c) {
  while (c.fd >= 0 && c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      // The reader is gone: drop what is left and close.
      c.out.clear();
      c.out_sent = 0;
      c.more = nullptr;
      c.in.clear();
      c.peer_closed = true;
      c.close_after = true;
      return;
    }
    c.out_sent += static_cast<std::size_t>(n);
    c.last_activity = loop_.now();
  }
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  } else if (c.out_sent >= settings_.high_water) {
    c.out.erase(0, c.out_sent);
    c.out_sent = 0;
  }
}

bool StreamServer::settle(Conn& c) {
  const bool pending = c.out_sent < c.out.size() || static_cast<bool>(c.more);
  if (!pending && (c.close_after || c.peer_closed)) {
    close_conn(c.fd);
    return false;
  }
  const bool waiting = !pending && !c.close_after;
  if (waiting && !c.waiting) {
    // A reply went out: the next request's time starts now. The timer may be set for later
    // than its deadline.
    c.waiting_since = loop_.now();
    if (settings_.request_timeout.count() > 0 &&
        c.waiting_since + settings_.request_timeout < c.timer_at) {
      if (c.idle_timer) loop_.cancel_timer(c.idle_timer);
      c.waiting = true;
      arm_idle_timer(c);
    }
  }
  c.waiting = waiting;
  // With more() pending and nothing queued, ask to hear when the socket is writable (at
  // once): the next chunk is produced on the next iteration, after other work on the loop.
  const bool want_write = pending;
  const bool want_read = !c.peer_closed && !c.close_after && !c.more &&
                         c.in.size() < settings_.max_request &&
                         c.out.size() - c.out_sent < settings_.high_water;
  const Interest i = want_read ? (want_write ? Interest::ReadWrite : Interest::Read)
                               : (want_write ? Interest::Write : Interest::None);
  loop_.modify_fd(c.fd, i);
  return true;
}

void StreamServer::arm_idle_timer(Conn& c) {
  MonoTime at = c.last_activity + settings_.idle_timeout;
  if (settings_.request_timeout.count() > 0 && c.waiting)
    at = std::min(at, c.waiting_since + settings_.request_timeout);
  const MonoTime now = loop_.now();
  c.timer_at = std::max(at, now + Millis{1});
  c.idle_timer = loop_.add_timer(std::chrono::duration_cast<Millis>(c.timer_at - now),
                                 [this, fd = c.fd, serial = c.serial] { on_idle(fd, serial); });
}

void StreamServer::on_idle(int fd, uint64_t serial) {
  auto it = conns_.find(fd);
  if (it == conns_.end() || it->second->serial != serial) return;
  Conn& c = *it->second;
  c.idle_timer = {};
  const MonoTime now = loop_.now();
  const bool idle = now - c.last_activity >= settings_.idle_timeout;
  const bool request_late = settings_.request_timeout.count() > 0 && c.waiting &&
                            now - c.waiting_since >= settings_.request_timeout;
  if (idle || request_late) {
    close_conn(fd);
  } else {
    arm_idle_timer(c);
  }
}

void StreamServer::close_conn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  loop_.remove_fd(fd);
  if (it->second->idle_timer) loop_.cancel_timer(it->second->idle_timer);
  ::close(fd);
  sources_.remove(it->second->source);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_sub(1, std::memory_order_relaxed);
  conns_.erase(it);
}

}  // namespace hg::resolver
