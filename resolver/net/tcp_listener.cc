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
}

Checked<std::unique_ptr<TcpListener>> TcpListener::open(EventLoop& loop, const Endpoint& addr,
                                                        bool reuse_port, Settings settings,
                                                        Handler handler) {
  using R = Checked<std::unique_ptr<TcpListener>>;
  auto sock = open_bound_socket(SOCK_STREAM, addr, reuse_port);
  if (!sock) return R::failure(sock.error());
  const int fd = sock->fd;
  const Endpoint local = sock->local;
  std::unique_ptr<TcpListener> l(
      new TcpListener(loop, fd, local, std::move(settings), std::move(handler)));
  if (!loop.add_fd(fd, Interest::Read, [p = l.get()](FdEvents) { p->on_accept(); }))
    return R::failure("cannot watch TCP socket " + addr.to_string() + ": " + std::strerror(errno));
  l->accepting_ = true;
  return l;
}

TcpListener::TcpListener(EventLoop& loop, int fd, Endpoint local, Settings settings,
                         Handler handler)
    : loop_(loop),
      fd_(fd),
      local_(local),
      settings_(std::move(settings)),
      handler_(std::move(handler)),
      loop_thread_(std::this_thread::get_id()) {}

TcpListener::~TcpListener() {
  close_all();
  pause();
  if (resume_timer_) loop_.cancel_timer(resume_timer_);
  ::close(fd_);
}

void TcpListener::pause() {
  if (accepting_) loop_.remove_fd(fd_);
  accepting_ = false;
  paused_ = true;
}

void TcpListener::close_all() {
  auto conns = std::move(conns_);
  conns_.clear();
  for (auto& [fd, c] : conns)
    c->close();
}

void TcpListener::forget(int fd, TcpConnection& c) {
  if (c.counted_) {
    c.counted_ = false;
    sources_.remove(c.source_);
    if (settings_.counters != nullptr)
      settings_.counters->open.fetch_sub(1, std::memory_order_relaxed);
  }
  conns_.erase(fd);
}

void TcpListener::resume_accepting() {
  resume_timer_ = {};
  if (accepting_ || paused_) return;
  accepting_ = loop_.add_fd(fd_, Interest::Read, [this](FdEvents) { on_accept(); });
}

void TcpListener::pause_accepting() {
  // The pending connection stays in the kernel's backlog, and a level-triggered listener
  // would wake us at once, forever. Stop accepting for a moment instead.
  if (!accepting_) return;
  loop_.remove_fd(fd_);
  accepting_ = false;
  resume_timer_ = loop_.add_timer(Millis{100}, [this] { resume_accepting(); });
}

void TcpListener::on_accept() {
  // run() may be on another thread than open(); answer() reads this from other workers.
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EMFILE || err == ENFILE) {
        // accept() fails so whether or not a connection waits: only one that does counts.
        if (!connection_pending(fd_)) return;
        count(&ConnCounters::fd_limit);
        // Out of descriptors: one held by an idle connection is better spent on the new one
        // (which may be the only client that wants an answer).
        if (make_room(nullptr)) continue;
      }
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) pause_accepting();
      return;
    }
    admit(fd, reinterpret_cast<const sockaddr*>(&ss), len);
  }
}

void TcpListener::admit(int fd, const sockaddr* sa, socklen_t len) {
  if (!peer_allowed(settings_.allow, sa)) {
    close_with_reset(fd);  // nothing read, no slot held: REFUSED is for UDP (query/admission.h)
    count(&ConnCounters::not_allowed);
    return;
  }
  const SourceKey key = source_key(sa);
  if (settings_.max_per_source > 0 && sources_.count(key) >= settings_.max_per_source) {
    count(&ConnCounters::per_source_limit);
    if (!make_room(&key)) {
      close_with_reset(fd);
      count(&ConnCounters::no_room);
      return;
    }
  }
  if (conns_.size() >= settings_.max_connections && !make_room(nullptr)) {
    close_with_reset(fd);  // full of busy connections: refuse rather than queue
    count(&ConnCounters::no_room);
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto peer = Endpoint::from_sockaddr(sa, len).value_or(Endpoint());
  auto c = std::make_shared<TcpConnection>(*this, fd, peer);
  if (!loop_.add_fd(fd, Interest::Read, [w = std::weak_ptr<TcpConnection>(c)](FdEvents ev) {
        if (auto s = w.lock()) s->on_events(ev);
      })) {
    return;  // the connection's destructor closes fd
  }
  c->source_ = key;
  c->serial_ = next_serial_++;
  c->counted_ = true;
  sources_.add(key);
  if (settings_.counters != nullptr)
    settings_.counters->open.fetch_add(1, std::memory_order_relaxed);
  c->last_activity_ = loop_.now();
  c->arm_idle_timer();
  conns_.emplace(fd, c);
  // A query that came with the handshake is read now: from then on the connection is busy,
  // and the next accepts of this same wakeup cannot close it to make room.
  c->read_some();
}

bool TcpListener::make_room(const SourceKey* only) {
  // A linear scan: the table holds at most max_connections (256), and this runs only when a
  // limit is reached.
  TcpConnection* victim = nullptr;
  for (const auto& [fd, c] : conns_) {
    if (!c->idle() || (only != nullptr && !(c->source_ == *only))) continue;
    if (victim == nullptr || c->last_activity_ < victim->last_activity_ ||
        (c->last_activity_ == victim->last_activity_ && c->serial_ < victim->serial_))
      victim = c.get();
  }
  if (victim == nullptr) return false;
  victim->close();
  count(&ConnCounters::evicted_idle);
  return true;
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
  owner_.forget(fd, *this);
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
    // A message is at most 2 + 65535 bytes; more buffered than that means we are only
    // waiting for the outstanding limit to clear.
    if (in_.size() > 2 + 65535) break;
    const std::size_t old = in_.size();
    in_.resize(old + kReadChunk);
    ssize_t n = ::recv(fd_, in_.data() + old, kReadChunk, MSG_DONTWAIT);
    if (n <= 0) {
      in_.resize(old);
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        peer_closed_ = true;
      }
      break;
    }
    in_.resize(old + static_cast<std::size_t>(n));
    last_activity_ = owner_.loop_.now();
    if (old == 0) partial_since_ = last_activity_;
    dispatch_buffered();
  }
  finish_or_update();
}

void TcpConnection::dispatch_buffered() {
  if (dispatching_) return;  // an immediate answer inside the handler re-enters via flush()
  dispatching_ = true;
  const auto& s = owner_.settings_;
  std::size_t pos = 0;
  // Cache hits are answered inside the handler, so outstanding_ does not grow for them: the
  // bytes queued for a client that does not read are what bounds a pipelined burst.
  while (!closed() && in_.size() - pos >= 2 && outstanding_ < s.max_outstanding &&
         out_.size() - out_sent_ < s.max_queued_bytes) {
    const std::size_t len = static_cast<std::size_t>(base::load_u16(&in_[pos]));
    if (in_.size() - pos - 2 < len) break;
    ++outstanding_;
    auto self = shared_from_this();
    owner_.handler_({in_.data() + pos + 2, len}, self);
    pos += 2 + len;
  }
  in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(pos));
  if (pos > 0 && !in_.empty()) partial_since_ = owner_.loop_.now();  // the next message began
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
  if (message.size() > 65535) message = message.first(0);
  if (!message.empty()) {
    out_.push_back(static_cast<uint8_t>(message.size() >> 8));
    out_.push_back(static_cast<uint8_t>(message.size()));
    out_.insert(out_.end(), message.begin(), message.end());
  }
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
