// cares_compat (cares_compat.h): each call whose name or shape differs between c-ares 1.18 and
// 1.34, chosen by ARES_VERSION. Versions between them (Ubuntu 24.04 has 1.27) take the
// newest call they have; each #if says which version brought the call it selects.
#include "resolver/upstream/cares_compat.h"

#include <ares.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#if ARES_VERSION < 0x011200
#error "hourglass needs c-ares 1.18 or newer (Debian 12: libc-ares-dev)"
#endif

namespace hg::resolver::cares {

namespace {

constexpr int kOldest = 0x011200;      // 1.18.0
constexpr int kNewestTested = 0x0122;  // 1.34.x: major and minor (v >> 8)

std::string version_text(int v) {
  return std::to_string((v >> 16) & 0xff) + "." + std::to_string((v >> 8) & 0xff) + "." +
         std::to_string(v & 0xff);
}

// The socket functions: c-ares's own would write TCP with writev() in 1.18, which raises
// SIGPIPE on a connection the server has reset; and every descriptor gets O_CLOEXEC at once.
int open_socket(int domain, int type, int protocol) {
  return ::socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
}

#if ARES_VERSION >= 0x012200  // 1.34.0: ares_set_socket_functions_ex

ares_socket_t ex_socket(int domain, int type, int protocol, void* /*user*/) {
  return open_socket(domain, type, protocol);
}
int ex_close(ares_socket_t fd, void* /*user*/) {
  return ::close(fd);
}
int ex_setsockopt(ares_socket_t fd, ares_socket_opt_t opt, const void* val, ares_socklen_t len,
                  void* /*user*/) {
  switch (opt) {
    case ARES_SOCKET_OPT_SENDBUF_SIZE:
      return ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, val, len);
    case ARES_SOCKET_OPT_RECVBUF_SIZE:
      return ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, val, len);
    default:  // documented: ENOSYS means "not supported", and c-ares goes on without it
      errno = ENOSYS;
      return -1;
  }
}
int ex_connect(ares_socket_t fd, const sockaddr* addr, ares_socklen_t len, unsigned int /*flags*/,
               void* /*user*/) {
  return ::connect(fd, addr, len);
}
ares_ssize_t ex_recvfrom(ares_socket_t fd, void* buf, size_t len, int flags, sockaddr* from,
                         ares_socklen_t* from_len, void* /*user*/) {
  return ::recvfrom(fd, buf, len, flags, from, from_len);
}
ares_ssize_t ex_sendto(ares_socket_t fd, const void* buf, size_t len, int /*flags*/,
                       const sockaddr* to, ares_socklen_t to_len, void* /*user*/) {
  if (to == nullptr) return ::send(fd, buf, len, MSG_NOSIGNAL);
  return ::sendto(fd, buf, len, MSG_NOSIGNAL, to, to_len);
}
int ex_getsockname(ares_socket_t fd, sockaddr* addr, ares_socklen_t* len, void* /*user*/) {
  return ::getsockname(fd, addr, len);
}

const ares_socket_functions_ex kSocketFunctions = {
    1,  // the ABI version the header documents
    ARES_SOCKFUNC_FLAG_NONBLOCKING,
    &ex_socket,
    &ex_close,
    &ex_setsockopt,
    &ex_connect,
    &ex_recvfrom,
    &ex_sendto,
    &ex_getsockname,
    nullptr,  // abind: optional, and hourglass binds no source address
    nullptr,  // aif_nametoindex: optional
    nullptr,  // aif_indextoname: optional
};

void set_socket_functions(ares_channel_t* ch) {
  ares_set_socket_functions_ex(ch, &kSocketFunctions, nullptr);
}

#else  // 1.18 .. 1.33: ares_set_socket_functions

ares_socket_t legacy_socket(int domain, int type, int protocol, void* /*user*/) {
  return open_socket(domain, type, protocol);
}
int legacy_close(ares_socket_t fd, void* /*user*/) {
  return ::close(fd);
}
int legacy_connect(ares_socket_t fd, const sockaddr* addr, ares_socklen_t len, void* /*user*/) {
  return ::connect(fd, addr, len);
}
ares_ssize_t legacy_recvfrom(ares_socket_t fd, void* buf, size_t len, int flags, sockaddr* from,
                             ares_socklen_t* from_len, void* /*user*/) {
  return ::recvfrom(fd, buf, len, flags, from, from_len);
}
ares_ssize_t legacy_sendv(ares_socket_t fd, const iovec* iov, int iovcnt, void* /*user*/) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);  // sendmsg does not write through it
  msg.msg_iovlen = static_cast<std::size_t>(iovcnt);
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
}

const ares_socket_functions kSocketFunctions = {&legacy_socket, &legacy_close, &legacy_connect,
                                                &legacy_recvfrom, &legacy_sendv};

void set_socket_functions(ares_channel ch) {
  ares_set_socket_functions(ch, &kSocketFunctions, nullptr);
}

#endif

struct Pending {
  AnswerFn done;
  void* arg;
};

#if ARES_VERSION >= 0x011c00  // 1.28.0: ares_send_dnsrec, and ares_send deprecated

void on_answer(void* arg, ares_status_t status, size_t /*timeouts*/, const ares_dns_record_t* rec) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(arg));
  if (status != ARES_SUCCESS || rec == nullptr) {
    p->done(p->arg, status == ARES_SUCCESS ? ARES_EBADRESP : static_cast<int>(status), {});
    return;
  }
  unsigned char* buf = nullptr;
  size_t len = 0;
  if (ares_dns_write(rec, &buf, &len) != ARES_SUCCESS || buf == nullptr) {
    p->done(p->arg, ARES_EBADRESP, {});
    return;
  }
  p->done(p->arg, ARES_SUCCESS, std::span<uint8_t>(buf, len));
  ares_free_string(buf);
}

#else

void on_answer(void* arg, int status, int /*timeouts*/, unsigned char* abuf, int alen) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(arg));
  if (status != ARES_SUCCESS || abuf == nullptr || alen <= 0) {
    p->done(p->arg, status == ARES_SUCCESS ? ARES_EBADRESP : status, {});
    return;
  }
  p->done(p->arg, ARES_SUCCESS, std::span<uint8_t>(abuf, static_cast<std::size_t>(alen)));
}

#endif

}  // namespace

std::string library_version() {
  int v = 0;
  ares_version(&v);
  return version_text(v);
}

std::optional<LibraryProblem> version_problem(int v) {
  if (v < kOldest) {
    return LibraryProblem{"c-ares " + version_text(v) +
                              " is older than hourglass supports (1.18 to 1.34); install "
                              "libc-ares2 1.18 or newer",
                          true};
  }
  if ((v >> 8) > kNewestTested) {
    return LibraryProblem{"warning: c-ares " + version_text(v) +
                              " is newer than the versions hourglass is tested with (1.18 to "
                              "1.34); it is used through its documented API only",
                          false};
  }
  return std::nullopt;
}

std::optional<LibraryProblem> library_problem() {
  int v = 0;
  ares_version(&v);
  return version_problem(v);
}

Checked<ares_channeldata*> open_tcp_channel(const ChannelSettings& settings) {
  using R = Checked<ares_channeldata*>;
  ares_options opts{};
  int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB |
             ARES_OPT_NOROTATE;
  // USEVC: this channel only ever carries TCP (UDP is Upstream's own). NOCHECKRESP: SERVFAIL,
  // REFUSED and NOTIMP come to the caller, which decides where the query goes next. STAYOPEN:
  // the connection is kept for the next truncated answer.
  opts.flags = ARES_FLAG_USEVC | ARES_FLAG_NOCHECKRESP | ARES_FLAG_STAYOPEN;
  // One try, alive for the whole query: Upstream retransmits itself, and ends the query at its
  // lifetime whatever c-ares still waits for. (c-ares 1.32+ shortens a try to 5x the server's
  // mean answer time once it has three samples, never under 250 ms; a try it ends early only
  // hands the query back to Upstream's retransmission.)
  opts.timeout = settings.timeout_ms;
  opts.tries = 1;
  opts.sock_state_cb = settings.socket_state;
  opts.sock_state_cb_data = settings.socket_state_data;
#ifdef ARES_OPT_MAXTIMEOUTMS  // 1.22; from 1.32 a try is cut at 5 s without it
  mask |= ARES_OPT_MAXTIMEOUTMS;
  opts.maxtimeout = settings.timeout_ms;
#endif
#ifdef ARES_OPT_QUERY_CACHE  // 1.23: a query cache, on by default; the cache is hourglass's
  mask |= ARES_OPT_QUERY_CACHE;
  opts.qcache_max_ttl = 0;
#endif
  ares_channeldata* ch = nullptr;
  int rc = ares_init_options(&ch, &opts, mask);
  if (rc != ARES_SUCCESS)
    return R::failure(std::string("c-ares initialisation failed: ") + ares_strerror(rc));
  set_socket_functions(ch);
  // "ADDR:PORT" or "[ADDR]:PORT": the form every supported version reads.
  rc = ares_set_servers_ports_csv(ch, settings.server.to_string().c_str());
  if (rc != ARES_SUCCESS) {
    ares_destroy(ch);
    return R::failure(std::string("c-ares refused the server ") + settings.server.to_string() +
                      ": " + ares_strerror(rc));
  }
  return R(ch);
}

void send(ares_channeldata* channel, std::span<const uint8_t> query, AnswerFn done, void* arg) {
  auto* p = new Pending{done, arg};
#if ARES_VERSION >= 0x011c00
  ares_dns_record_t* rec = nullptr;
  if (ares_dns_parse(query.data(), query.size(), 0, &rec) != ARES_SUCCESS) {
    delete p;
    done(arg, ARES_EBADQUERY, {});
    return;
  }
  // The callback runs exactly once, also for an error found here; the status returned says
  // nothing more.
  (void)ares_send_dnsrec(channel, rec, &on_answer, p, nullptr);
  ares_dns_record_destroy(rec);
#else
  ares_send(channel, query.data(), static_cast<int>(query.size()), &on_answer, p);
#endif
}

}  // namespace hg::resolver::cares
