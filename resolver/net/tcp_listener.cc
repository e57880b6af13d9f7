#include "resolver/net/tcp_listener.h"

#include "base/bytes.h"
#include "resolver/net/bound_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hg::resolver {

namespace {

constexpr std::size_t kReadChunk = 4096;

AcceptorSettings admission(const TcpListener::Settings& s) {
  return AcceptorSettings{.max_connections = s.max_connections,
                          .max_per_source = s.max_per_source,
                          .evict_idle = true,
                          .allow = s.allow,
                          .counters = s.counters,
                          .accepts_per_wakeup = 64};
}

}  // namespace

Checked<std::unique_ptr<TcpListener>> TcpListener::open(EventLoop& loop, const Endpoint& addr,
                                                        bool reuse_port, Settings settings,
                                                        Handler handler) {
  using R = Checked<std::unique_ptr<TcpListener>>;
  auto sock = open_bound_socket(SOCK_STREAM, addr, reuse_port);
  if (!sock) return R::failure(sock.error());
  std::unique_ptr<TcpListener> l(
      new TcpListener(loop, sock->local, std::move(settings), std::move(handler)));
  if (!l->acceptor_.start(sock->fd)) {
    const int err = errno;
    ::close(sock->fd);
    return R::failure("cannot watch TCP socket " + addr.to_string() + ": " + std::strerror(err));
  }
  return l;
}

TcpListener::TcpListener(EventLoop& loop, Endpoint local, Settings settings, Handler handler)
    : loop_(loop),
      local_(local),
      settings_(std::move(settings)),
      handler_(std::move(handler)),
      loop_thread_(std::this_thread::get_id()),
      acceptor_(loop, admission(settings_), *this) {}

TcpListener::~TcpListener() {
  close_all();
  pause();
}

void TcpListener::pause() {
  acceptor_.stop();
}

void TcpListener::close_all() {
  auto conns = std::move(conns_);
  conns_.clear();
  for (auto& [fd, c] : conns)
    c->close();
}

void TcpListener::forget(int fd) {
  acceptor_.release(fd);
  conns_.erase(fd);
}

bool TcpListener::open_connection(int fd, const sockaddr* sa, socklen_t len, uint64_t) {
  // run() may be on another thread than open(); answer() reads this from other workers.
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto peer = Endpoint::from_sockaddr(sa, len).value_or(Endpoint());
  auto c = std::make_shared<TcpConnection>(*this, fd, peer);
  if (!loop_.add_fd(fd, Interest::Read, [w = std::weak_ptr<TcpConnection>(c)](FdEvents ev) {
        if (auto s = w.lock()) s->on_events(ev);
      })) {
    return false;  // the connection's destructor closes fd
  }
  c->last_activity_ = loop_.now();
  c->arm_idle_timer();
  conns_.emplace(fd, c);
  // A query that came with the handshake is read now: from then on the connection is busy,
  // and the next accepts of this same wakeup cannot close it to make room.
  c->read_some();
  return true;
}

std::optional<MonoTime> TcpListener::idle_since(int fd) const {
  const auto it = conns_.find(fd);
  if (it == conns_.end() || !it->second->idle()) return std::nullopt;
  return it->second->last_activity_;
}

void TcpListener::evict(int fd) {
  if (const auto it = conns_.find(fd); it != conns_.end()) it->second->close();
}

TcpConnection::TcpConnection(TcpListener& owner, int fd, Endpoint peer)
    : owner_(owner), fd_(fd), peer_(peer) {}

TcpConnection::~TcpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpConnection::close() {
  if (fd_ < 0) return;
  // Keep alive while we unregister. weak_from_this().lock() rather than shared_from_this():
  // it cannot throw (bad_weak_ptr), and ~TcpListener reaches here through close_all().
  auto self = weak_from_this().lock();
  owner_.loop_.remove_fd(fd_);
  if (idle_timer_) owner_.loop_.cancel_timer(idle_timer_);
  idle_timer_ = {};
  ::close(fd_);
  const int fd = fd_;
  fd_ = -1;
  owner_.forget(fd);
}

void TcpConnection::arm_idle_timer() {
  // RFC 7766 §6.2.3: close idle connections; a connection with queries still being resolved
  // is not idle.
  // A message that has started must also finish within partial_timeout, counted from its
  // first byte: trickling one byte at a time must not hold a connection slot forever.
  const auto& s = owner_.settings_;
  const Millis wait = in_.empty() ? s.idle_timeout : std::min(s.idle_timeout, s.partial_timeout);
  idle_timer_ = owner_.loop_.add_timer(wait, [w = weak_from_this()] {
    auto self = w.lock();
    if (!self || self->closed()) return;
    self->idle_timer_ = {};
    const auto& st = self->owner_.settings_;
    const MonoTime now = self->owner_.loop_.now();
    const bool stalled = !self->in_.empty() && now - self->partial_since_ >= st.partial_timeout;
    const bool idle = self->outstanding_ == 0 && now - self->last_activity_ >= st.idle_timeout;
    if (stalled || idle) {
      self->close();
    } else {
      self->arm_idle_timer();
    }
  });
}

void TcpConnection::on_events(FdEvents ev) {
  if (closed()) return;
  // A reset (EPOLLERR), or a hang-up after we already saw the end of the stream: nothing can
  // be read or written any more, and epoll would report it again on every iteration while
  // queries are outstanding. Close now; late answers find the connection closed.
  if (ev.error || (ev.hangup && peer_closed_)) {
    close();
    return;
  }
  if (ev.writable) flush();
  if (closed()) return;
  if (ev.readable || ev.hangup || ev.error) read_some();
}

void TcpConnection::read_some() {
  const auto& s = owner_.settings_;
  for (int rounds = 0; rounds < 16 && !closed() && !peer_closed_; ++rounds) {
    if (outstanding_ >= s.max_outstanding || out_.size() - out_sent_ >= s.max_queued_bytes) break;
    // Full means a whole message is buffered (the framer's cap is one message of the largest
    // size): we are only waiting for the outstanding limit to clear.
    const bool was_empty = in_.empty();
    const std::span<uint8_t> area = in_.write_area(kReadChunk);
    if (area.empty()) break;
    ssize_t n = ::recv(fd_, area.data(), area.size(), MSG_DONTWAIT);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        peer_closed_ = true;
      }
      break;
    }
    in_.commit(static_cast<std::size_t>(n));
    last_activity_ = owner_.loop_.now();
    if (was_empty) partial_since_ = last_activity_;
    dispatch_buffered();
  }
  finish_or_update();
}

void TcpConnection::dispatch_buffered() {
  if (dispatching_) return;  // an immediate answer inside the handler re-enters via flush()
  dispatching_ = true;
  const auto& s = owner_.settings_;
  bool took = false;
  // Cache hits are answered inside the handler, so outstanding_ does not grow for them: the
  // bytes queued for a client that does not read are what bounds a pipelined burst.
  while (!closed() && outstanding_ < s.max_outstanding &&
         out_.size() - out_sent_ < s.max_queued_bytes) {
    const auto query = in_.next();
    if (!query) break;
    took = true;
    ++outstanding_;
    auto self = shared_from_this();
    owner_.handler_(*query, self);
  }
  if (took && !in_.empty()) partial_since_ = owner_.loop_.now();  // the next message began
  dispatching_ = false;
}

void TcpConnection::finish_or_update() {
  if (closed()) return;
  if (peer_closed_ && outstanding_ == 0 && out_sent_ == out_.size()) {
    close();
    return;
  }
  update_interest();
}

void TcpConnection::update_interest() {
  if (closed()) return;
  const auto& s = owner_.settings_;
  const bool want_write = out_sent_ < out_.size();
  const bool want_read = !peer_closed_ && outstanding_ < s.max_outstanding &&
                         out_.size() - out_sent_ < s.max_queued_bytes;
  Interest i = want_read ? (want_write ? Interest::ReadWrite : Interest::Read)
                         : (want_write ? Interest::Write : Interest::None);
  owner_.loop_.modify_fd(fd_, i);
}

void TcpConnection::answer(std::span<const uint8_t> message) {
  if (std::this_thread::get_id() == owner_.loop_thread_.load(std::memory_order_relaxed)) {
    answer_on_loop(message);
    return;
  }
  owner_.loop_.post(
      [self = shared_from_this(), copy = std::vector<uint8_t>(message.begin(), message.end())] {
        self->answer_on_loop(copy);
      });
}

void TcpConnection::answer_on_loop(std::span<const uint8_t> message) {
  if (outstanding_ > 0) --outstanding_;
  if (closed()) return;
  // An answer too long for its length prefix is dropped (StreamFramer::append_framed).
  if (!message.empty()) StreamFramer::append_framed(out_, message);
  last_activity_ = owner_.loop_.now();
  flush();
}

void TcpConnection::no_answer() {
  answer({});
}

void TcpConnection::flush() {
  while (!closed() && out_sent_ < out_.size()) {
    ssize_t n =
        ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      close();
      return;
    }
    out_sent_ += static_cast<std::size_t>(n);
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
  // A finished query may let buffered queries through; then adjust what we wait for.
  if (!dispatching_) dispatch_buffered();
  finish_or_update();
}

}  // namespace hg::resolver
