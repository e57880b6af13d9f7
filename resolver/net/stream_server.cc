#include "resolver/net/stream_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hg::resolver {

namespace {

constexpr std::size_t kReadChunk = 4096;
constexpr int kReadsPerWakeup = 16;

AcceptorSettings admission(const StreamServerSettings& s) {
  return AcceptorSettings{.max_connections = s.max_connections,
                          .max_per_source = s.max_per_source,
                          .evict_idle = s.evict_idle,
                          .allow = s.allow,
                          .counters = s.counters,
                          .accepts_per_wakeup = 16};
}

}  // namespace

std::unique_ptr<StreamServer> StreamServer::start(EventLoop& loop, int listen_fd,
                                                  StreamServerSettings settings, Handler handler) {
  std::unique_ptr<StreamServer> s(new StreamServer(loop, std::move(settings), std::move(handler)));
  if (!s->acceptor_.start(listen_fd)) return nullptr;  // errno set; the caller keeps the fd
  return s;
}

StreamServer::StreamServer(EventLoop& loop, StreamServerSettings settings, Handler handler)
    : loop_(loop),
      settings_(std::move(settings)),
      handler_(std::move(handler)),
      acceptor_(loop, admission(settings_), *this) {}

StreamServer::~StreamServer() {
  std::vector<int> fds;
  fds.reserve(conns_.size());
  for (const auto& [fd, c] : conns_)
    fds.push_back(fd);
  for (const int fd : fds)
    close_conn(fd);
}

bool StreamServer::open_connection(int fd, const sockaddr*, socklen_t, uint64_t serial) {
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->serial = serial;
  c->last_activity = loop_.now();
  c->waiting_since = c->last_activity;
  if (!loop_.add_fd(fd, Interest::Read, [this, fd](FdEvents ev) { on_events(fd, ev); })) {
    ::close(fd);
    return false;
  }
  Conn& ref = *c;
  conns_.emplace(fd, std::move(c));
  arm_idle_timer(ref);
  // A request that came with the handshake is handled now, before the next accept of this
  // wakeup could close the connection to make room.
  on_events(fd, FdEvents{.readable = true});
  return true;
}

std::optional<MonoTime> StreamServer::idle_since(int fd) const {
  const auto it = conns_.find(fd);
  if (it == conns_.end() || !it->second->waiting || it->second->close_after) return std::nullopt;
  return it->second->last_activity;
}

void StreamServer::evict(int fd) {
  close_conn(fd);
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
  conns_.erase(it);
  acceptor_.release(fd);
}

}  // namespace hg::resolver
