// Upstream implementation: c-ares 1.18 channels on an EventLoop.
//
// Why more than one channel: ares_set_servers_ports() refuses (ARES_ENOTIMP) while queries
// are pending, so reload_servers() opens a new channel for new queries and retires the old
// one, destroying it once its last query has ended — never from inside a c-ares callback,
// where ares_destroy() is not allowed, but from a zero-delay loop timer.
#include "resolver/upstream.h"

#include <ares.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

namespace hg::resolver {

struct Upstream::Channel {
  Upstream* owner = nullptr;
  ares_channel ares = nullptr;
  std::size_t pending = 0;  // our queries not yet reported
  bool retired = false;     // no new queries; destroy when pending reaches 0
  bool destroy_scheduled = false;
  TimerId destroy_timer;
  TimerId timer;
  MonoTime timer_at{};
  std::vector<int> fds;  // sockets c-ares asked us to watch
};

struct Upstream::Query {
  Upstream* owner;
  Channel* channel;
  uint16_t id;
  Callback done;
};

namespace {

constexpr std::size_t kHeaderSize = 12;
constexpr std::size_t kRandomBatch = 256;

void init_library_once() {
  static std::once_flag once;
  // ARES_LIB_INIT_ALL only matters on Windows; c-ares asks for it everywhere all the same.
  std::call_once(once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
}

UpstreamStatus map_status(int status) {
  switch (status) {
    case ARES_SUCCESS:
      return UpstreamStatus::Ok;
    case ARES_ETIMEOUT:
      return UpstreamStatus::Timeout;
    case ARES_ESERVFAIL:
      return UpstreamStatus::ServFail;
    case ARES_EREFUSED:
      return UpstreamStatus::Refused;
    case ARES_ENOTIMP:
      return UpstreamStatus::NotImp;
    case ARES_ECONNREFUSED:
      return UpstreamStatus::NetworkError;
    case ARES_EBADRESP:
    case ARES_EFORMERR:
      return UpstreamStatus::BadResponse;
    case ARES_EBADQUERY:
      return UpstreamStatus::BadQuery;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      return UpstreamStatus::Cancelled;
    default:  // ARES_ENOMEM and anything a newer c-ares may add
      return UpstreamStatus::Internal;
  }
}

// c-ares 1.18 has no field for an IPv6 scope, so a link-local server would be unreachable.
std::optional<std::string> unusable_server(std::span<const Endpoint> servers) {
  for (const Endpoint& s : servers) {
    if (s.family() == AF_INET6 && s.v6().sin6_scope_id != 0) {
      return "upstream " + s.to_string() +
             ": link-local IPv6 servers with a %scope are not supported by c-ares 1.18; use a "
             "global or IPv4 address";
    }
    if (s.port() == 0) return "upstream " + s.to_string() + ": port 0 is not a server port";
  }
  return std::nullopt;
}

// Socket functions: plain POSIX calls, plus a look at each UDP answer on its way in.
//
// c-ares 1.18.1 reports "every server answered SERVFAIL/REFUSED/NOTIMP" with the status it
// starts every query with, ARES_ECONNREFUSED — the same status as an ICMP port-unreachable.
// The daemon picks its Extended DNS Error by status (22 No Reachable Authority against 23
// Network Error), so we note the RCODE of such answers per query ID here and use it when
// the query fails. This only labels the failure; c-ares still decides what to do. TCP
// reads (from == nullptr) are not inspected: their byte stream is not split into messages.
ares_socket_t sock_open(int domain, int type, int protocol, void*) {
  return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
}

int sock_close(ares_socket_t fd, void*) {
  return close(fd);
}

int sock_connect(ares_socket_t fd, const sockaddr* addr, ares_socklen_t len, void*) {
  return connect(fd, addr, len);
}

ares_ssize_t sock_recvfrom(ares_socket_t fd, void* buf, size_t len, int flags, sockaddr* from,
                           ares_socklen_t* from_len, void* user) {
  ssize_t n = recvfrom(fd, buf, len, flags, from, from_len);
  if (n >= 4 && from != nullptr) {
    const auto* b = static_cast<const uint8_t*>(buf);
    uint8_t rcode = b[3] & 0x0f;
    if (rcode == 2 || rcode == 4 || rcode == 5) {  // SERVFAIL, NOTIMP, REFUSED
      auto id = static_cast<uint16_t>((b[0] << 8) | b[1]);
      static_cast<std::array<uint8_t, 65536>*>(user)->at(id) = rcode;
    }
  }
  return n;
}

ares_ssize_t sock_sendv(ares_socket_t fd, const iovec* iov, int iovcnt, void*) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);  // sendmsg does not write through it
  msg.msg_iovlen = static_cast<std::size_t>(iovcnt);
  // MSG_NOSIGNAL: a TCP upstream that resets must not kill the daemon with SIGPIPE.
  return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

const ares_socket_functions kSocketFunctions = {sock_open, sock_close, sock_connect, sock_recvfrom,
                                                sock_sendv};

int set_servers(ares_channel ch, std::span<const Endpoint> servers) {
  std::vector<ares_addr_port_node> nodes(servers.size());
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const Endpoint& s = servers[i];
    ares_addr_port_node& n = nodes[i];
    std::memset(&n, 0, sizeof n);
    n.next = i + 1 < servers.size() ? &nodes[i + 1] : nullptr;
    n.family = s.family();
    if (s.family() == AF_INET) {
      n.addr.addr4 = s.v4().sin_addr;
    } else {
      std::memcpy(&n.addr.addr6, &s.v6().sin6_addr, sizeof n.addr.addr6);
    }
    n.udp_port = s.port();
    n.tcp_port = s.port();
  }
  return ares_set_servers_ports(ch, nodes.empty() ? nullptr : nodes.data());
}

}  // namespace

std::string_view to_string(UpstreamStatus s) noexcept {
  switch (s) {
    case UpstreamStatus::Ok:
      return "ok";
    case UpstreamStatus::Timeout:
      return "timeout";
    case UpstreamStatus::ServFail:
      return "servfail";
    case UpstreamStatus::Refused:
      return "refused";
    case UpstreamStatus::NotImp:
      return "notimp";
    case UpstreamStatus::NetworkError:
      return "network-error";
    case UpstreamStatus::BadResponse:
      return "bad-response";
    case UpstreamStatus::BadQuery:
      return "bad-query";
    case UpstreamStatus::NoServers:
      return "no-servers";
    case UpstreamStatus::Cancelled:
      return "cancelled";
    case UpstreamStatus::Internal:
      return "internal";
  }
  return "unknown";
}

Upstream::Upstream(EventLoop& loop, UpstreamOptions options)
    : loop_(loop),
      options_(std::move(options)),
      failed_rcodes_(std::make_unique<std::array<uint8_t, 65536>>()) {}

Checked<std::unique_ptr<Upstream>> Upstream::create(EventLoop& loop, UpstreamOptions options) {
  using R = Checked<std::unique_ptr<Upstream>>;
  if (auto why = unusable_server(options.servers)) return R::failure(*why);
  if (options.tries < 1) return R::failure("upstream tries must be at least 1");
  if (options.try_timeout.count() < 1) return R::failure("upstream try timeout must be >= 1 ms");
  init_library_once();
  std::unique_ptr<Upstream> up(new Upstream(loop, std::move(options)));
  auto ch = up->open_channel(up->options_.servers);
  if (!ch) return R::failure(ch.error());
  return R(std::move(up));
}

Upstream::~Upstream() {
  for (TimerId t : deferred_)
    loop_.cancel_timer(t);
  // ares_destroy reports ARES_EDESTRUCTION to each pending query; on_answer frees those
  // without calling back (see the header), then closes the sockets via on_sock_state.
  while (!channels_.empty()) {
    Channel* ch = channels_.back().get();
    destroy_channel(ch);
  }
}

Checked<Upstream::Channel*> Upstream::open_channel(std::span<const Endpoint> servers) {
  auto ch = std::make_unique<Channel>();
  ch->owner = this;

  ares_options opts{};
  int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB |
             ARES_OPT_EDNSPSZ | (options_.rotate ? ARES_OPT_ROTATE : ARES_OPT_NOROTATE);
  // EDNS: without it, every UDP answer over 512 bytes counts as truncated and is retried
  // over TCP. With several servers NOCHECKRESP stays off: SERVFAIL/REFUSED make c-ares try
  // the next server.
  opts.flags = ARES_FLAG_EDNS;
  // With a single server, c-ares 1.18 answers a SERVFAIL/REFUSED/NOTIMP by asking the same
  // server again (its skip_server() never skips the only server), so one failing name cost
  // two upstream queries. With one server there is no other to try: take such answers as
  // they are (NOCHECKRESP) and turn them into failures in on_answer().
  if (servers.size() == 1) opts.flags |= ARES_FLAG_NOCHECKRESP;
  opts.timeout = static_cast<int>(options_.try_timeout.count());
  opts.tries = options_.tries;
  opts.ednspsz = options_.edns_payload;
  opts.sock_state_cb = &Upstream::on_sock_state;
  opts.sock_state_cb_data = ch.get();
  int rc = ares_init_options(&ch->ares, &opts, mask);
  if (rc != ARES_SUCCESS) {
    return Checked<Channel*>::failure(std::string("c-ares initialisation failed: ") +
                                      ares_strerror(rc));
  }
  ares_set_socket_functions(ch->ares, &kSocketFunctions, failed_rcodes_.get());
  rc = set_servers(ch->ares, servers);
  if (rc != ARES_SUCCESS) {
    ares_destroy(ch->ares);
    return Checked<Channel*>::failure(std::string("c-ares refused the server list: ") +
                                      ares_strerror(rc));
  }
  for (auto& old : channels_)
    old->retired = true;
  channels_.push_back(std::move(ch));
  Channel* fresh = channels_.back().get();
  // Retire (and, when idle, destroy) the channels that no longer take queries.
  for (std::size_t i = 0; i + 1 < channels_.size(); ++i)
    retire_if_idle(*channels_[i]);
  return fresh;
}

void Upstream::on_sock_state(void* data, int fd, int readable, int writable) {
  auto* ch = static_cast<Channel*>(data);
  Upstream* self = ch->owner;
  EventLoop& loop = self->loop_;
  if (!readable && !writable) {
    loop.remove_fd(fd);
    std::erase(ch->fds, fd);
    return;
  }
  Interest interest = readable && writable ? Interest::ReadWrite
                      : readable           ? Interest::Read
                                           : Interest::Write;
  if (std::find(ch->fds.begin(), ch->fds.end(), fd) != ch->fds.end()) {
    loop.modify_fd(fd, interest);
    return;
  }
  bool added = loop.add_fd(fd, interest, [ch, fd](FdEvents ev) {
    // On an error or hang-up, let c-ares read (it will see the error and fail over).
    bool rd = ev.readable || ev.error || ev.hangup;
    ch->owner->process(*ch, rd ? fd : ARES_SOCKET_BAD, ev.writable ? fd : ARES_SOCKET_BAD);
  });
  // add_fd fails only if the kernel refuses the watch (ENOMEM/ENOSPC): the query on this
  // socket then ends by timeout, driven by the channel timer.
  if (added) ch->fds.push_back(fd);
}

void Upstream::process(Channel& ch, int read_fd, int write_fd) {
  ares_process_fd(ch.ares, read_fd, write_fd);
  rearm_timer_if_needed(ch);
  retire_if_idle(ch);
}

void Upstream::rearm_timer_if_needed(Channel& ch) {
  // Every deadline c-ares sets is at least try_timeout from now (later rounds double it),
  // and answers only remove deadlines. So a timer already due by now + try_timeout still
  // fires in time for every query — at worst early, which costs one recomputation. This
  // matters because ares_timeout() walks every pending query in 1.18: calling it for each
  // packet would make a busy channel quadratic.
  if (ch.timer && ch.timer_at <= loop_.now() + options_.try_timeout) return;
  rearm_timer(ch);
}

void Upstream::rearm_timer(Channel& ch) {
  if (ch.ares == nullptr) return;
  timeval tv{};
  timeval* next = ares_timeout(ch.ares, nullptr, &tv);
  if (next == nullptr) {
    if (ch.timer) loop_.cancel_timer(ch.timer);
    ch.timer = {};
    return;
  }
  // Round up: a timer that fires before c-ares's deadline only causes another round.
  auto ms = Millis{static_cast<int64_t>(next->tv_sec) * 1000 + (next->tv_usec + 999) / 1000};
  MonoTime at = loop_.now() + std::max(ms, Millis{1});
  if (ch.timer && ch.timer_at == at) return;
  if (ch.timer) loop_.cancel_timer(ch.timer);
  ch.timer_at = at;
  Channel* chp = &ch;
  ch.timer = loop_.add_timer_at(at, [this, chp] {
    chp->timer = {};
    process(*chp, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  });
}

void Upstream::retire_if_idle(Channel& ch) {
  if (!ch.retired || ch.pending != 0 || ch.destroy_scheduled) return;
  ch.destroy_scheduled = true;
  Channel* chp = &ch;
  ch.destroy_timer = loop_.add_timer(Millis{0}, [this, chp] {
    chp->destroy_timer = {};
    destroy_channel(chp);
  });
}

void Upstream::destroy_channel(Channel* ch) {
  if (ch->timer) loop_.cancel_timer(ch->timer);
  if (ch->destroy_timer) loop_.cancel_timer(ch->destroy_timer);
  ch->timer = {};
  ares_channel a = ch->ares;
  ares_destroy(a);  // may call on_answer (EDESTRUCTION) and on_sock_state (close)
  ch->ares = nullptr;
  for (int fd : ch->fds)
    loop_.remove_fd(fd);
  std::erase_if(channels_, [ch](const std::unique_ptr<Channel>& c) { return c.get() == ch; });
}

std::optional<uint16_t> Upstream::next_id() {
  if (ids_in_use_.all()) return std::nullopt;
  // Rejection sampling keeps the ID uniform over the free ones; with fewer than half the
  // IDs in use (the normal case by far) it takes under two draws on average.
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (random_ids_.empty()) {
      random_ids_.resize(kRandomBatch);
      std::size_t bytes = random_ids_.size() * sizeof(uint16_t);
      ssize_t got = getrandom(random_ids_.data(), bytes, 0);
      if (got != static_cast<ssize_t>(bytes)) {
        random_ids_.clear();
        return std::nullopt;  // getrandom cannot fail on Linux >= 3.17 once seeded
      }
    }
    uint16_t id = random_ids_.back();
    random_ids_.pop_back();
    if (!ids_in_use_.test(id)) return id;
  }
  for (std::size_t i = 0; i < ids_in_use_.size(); ++i) {
    if (!ids_in_use_.test(i)) return static_cast<uint16_t>(i);
  }
  return std::nullopt;
}

void Upstream::report_later(Callback done, UpstreamStatus status, std::vector<uint8_t> answer) {
  ++in_flight_;
  // The timer's id is known only after add_timer returns; the callback finds it by value.
  auto slot = std::make_shared<TimerId>();
  *slot = loop_.add_timer(Millis{0},
                          [this, slot, done = std::move(done), status, answer = std::move(answer)] {
                            std::erase(deferred_, *slot);
                            --in_flight_;
                            done(status, answer);
                          });
  deferred_.push_back(*slot);
}

std::optional<uint16_t> Upstream::send(std::span<const uint8_t> query, Callback done) {
  if (query.size() < kHeaderSize || query.size() > 65535) {
    report_later(std::move(done), UpstreamStatus::BadQuery, {});
    return std::nullopt;
  }
  if (options_.servers.empty()) {
    report_later(std::move(done), UpstreamStatus::NoServers, {});
    return std::nullopt;
  }
  auto id = next_id();
  if (!id) {
    report_later(std::move(done), UpstreamStatus::Internal, {});
    return std::nullopt;
  }
  Channel* ch = channels_.back().get();
  scratch_.assign(query.begin(), query.end());
  scratch_[0] = static_cast<uint8_t>(*id >> 8);
  scratch_[1] = static_cast<uint8_t>(*id & 0xff);

  ids_in_use_.set(*id);
  ++in_flight_;
  ++ch->pending;
  auto* q = new Query{this, ch, *id, std::move(done)};
  in_send_ = true;
  ares_send(ch->ares, scratch_.data(), static_cast<int>(scratch_.size()), &Upstream::on_answer, q);
  in_send_ = false;
  rearm_timer_if_needed(*ch);
  return *id;
}

void Upstream::on_answer(void* arg, int status, int /*timeouts*/, unsigned char* abuf, int alen) {
  std::unique_ptr<Query> q(static_cast<Query*>(arg));
  Upstream* self = q->owner;
  Channel* ch = q->channel;
  --ch->pending;
  self->ids_in_use_.reset(q->id);
  uint8_t failed_rcode = std::exchange(self->failed_rcodes_->at(q->id), uint8_t{0});
  if (status == ARES_EDESTRUCTION) {  // ~Upstream: drop, as documented
    --self->in_flight_;
    return;
  }
  UpstreamStatus s = map_status(status);
  if (status == ARES_ECONNREFUSED && failed_rcode != 0) {
    s = failed_rcode == 2   ? UpstreamStatus::ServFail
        : failed_rcode == 5 ? UpstreamStatus::Refused
                            : UpstreamStatus::NotImp;
  }
  std::span<const uint8_t> answer;
  if (s == UpstreamStatus::Ok && abuf != nullptr && alen > 0) {
    answer = {abuf, static_cast<std::size_t>(alen)};
  } else if (s == UpstreamStatus::Ok) {
    s = UpstreamStatus::BadResponse;  // success without bytes: not seen, but not trusted
  }
  if (s == UpstreamStatus::Ok && answer.size() >= 4) {
    // Only reached on single-server channels (ARES_FLAG_NOCHECKRESP, see open_channel).
    switch (answer[3] & 0x0f) {
      case 2:
        s = UpstreamStatus::ServFail;
        break;
      case 4:
        s = UpstreamStatus::NotImp;
        break;
      case 5:
        s = UpstreamStatus::Refused;
        break;
      default:
        break;
    }
    if (s != UpstreamStatus::Ok) answer = {};
  }
  if (self->in_send_) {
    // c-ares failed the query inside ares_send (e.g. the UDP send was refused); report it
    // at the next iteration so the caller never sees its callback run inside send().
    --self->in_flight_;  // report_later counts it again
    self->report_later(std::move(q->done), s, std::vector<uint8_t>(answer.begin(), answer.end()));
    return;
  }
  --self->in_flight_;
  q->done(s, answer);
}

std::optional<std::string> Upstream::reload_servers(std::span<const Endpoint> servers) {
  if (auto why = unusable_server(servers)) return why;
  Channel& cur = *channels_.back();
  // Cheap path: nothing pending (as far as c-ares is concerned), so the channel can switch —
  // unless the switch crosses between one server and several, which changes the channel's
  // flags (NOCHECKRESP, see open_channel).
  const bool same_shape = (servers.size() == 1) == (options_.servers.size() == 1);
  if (same_shape && cur.pending == 0 && set_servers(cur.ares, servers) == ARES_SUCCESS) {
    options_.servers.assign(servers.begin(), servers.end());
    return std::nullopt;
  }
  auto fresh = open_channel(servers);
  if (!fresh) return fresh.error();
  options_.servers.assign(servers.begin(), servers.end());
  return std::nullopt;
}

void Upstream::cancel_all() {
  // Copy the list: a callback may send a new query (landing on the current channel, which
  // ares_cancel has already swept or will sweep) or reload the servers.
  std::vector<Channel*> chans;
  for (auto& c : channels_)
    chans.push_back(c.get());
  for (Channel* c : chans) {
    if (c->ares != nullptr) ares_cancel(c->ares);
  }
  for (Channel* c : chans) {
    rearm_timer(*c);
    retire_if_idle(*c);
  }
}

}  // namespace hg::resolver
