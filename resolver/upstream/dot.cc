// DoT transport (resolver/upstream/dot.h) with OpenSSL: non-blocking connect, handshake, reads and
// writes, all driven by the EventLoop's readiness callbacks.
#include "resolver/upstream/dot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/bytes.h"
#include "base/small_file.h"
#include "resolver/log.h"
#include "resolver/upstream/upstream_board.h"

namespace hg::resolver {

namespace {

constexpr std::size_t kHeader = 12;
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr int kReadsPerWake = 32;
constexpr long kWriteBuffer = 32 * 1024;  // the bound of in-flight queries fits, as records
// A query is written to at most this many connections: the one that died under it and one
// more; then it fails (NetworkError) and Upstream moves it to the next server.
constexpr uint8_t kMaxConnectionsPerQuery = 2;

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == ':' || c == '_';
}

std::string ssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string("no detail") : out;
}

SSL* as_ssl(void* p) {
  return static_cast<SSL*>(p);
}

int ex_index() {
  static const int idx = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return idx;
}

}  // namespace

// The session callback stores TLS 1.3 tickets (which arrive after the handshake) per server.
struct DotSessionHook {
  static int on_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* ch = static_cast<DotChannel*>(SSL_get_ex_data(ssl, ex_index()));
    if (ch == nullptr) return 0;
    // A copy: OpenSSL marks the connection's own session not resumable when the connection
    // ends without a close_notify (a server's idle close, a reset), which is how most end.
    SSL_SESSION* copy = SSL_SESSION_dup(session);
    if (copy == nullptr) return 0;
    if (ch->session_ != nullptr) SSL_SESSION_free(static_cast<SSL_SESSION*>(ch->session_));
    ch->session_ = copy;
    return 0;  // OpenSSL keeps (and frees) the original
  }
};

// --- syntax ------------------------------------------------------------------------------

bool is_tls_spec(std::string_view text) noexcept {
  return text.size() >= 6 && (text.substr(0, 6) == "tls://" || text.substr(0, 6) == "TLS://");
}

Checked<TlsTarget> parse_tls_upstream(std::string_view text) {
  using R = Checked<TlsTarget>;
  constexpr std::string_view kAllowed =
      "expected tls://ADDR[:PORT][#AUTH-NAME] with a numeric address (IPv6 as [ADDR]:PORT), port "
      "853 by default, e.g. tls://192.0.2.1#dns.example or tls://[2001:db8::1]:853#dns.example";
  if (!is_tls_spec(text)) return R::failure("no tls:// prefix; " + std::string(kAllowed));
  std::string_view rest = text.substr(6);
  TlsTarget t;
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    const std::string_view name = rest.substr(hash + 1);
    rest = rest.substr(0, hash);
    if (name.empty() || name.size() > 253 || !std::all_of(name.begin(), name.end(), host_char))
      return R::failure("the authentication name after '#' is not a host name; " +
                        std::string(kAllowed));
    t.auth_name = std::string(name);
  }
  auto e = parse_endpoint(rest, 853);
  if (!e || e->port() == 0) return R::failure("not ADDR[:PORT]; " + std::string(kAllowed));
  t.endpoint = *e;
  return t;
}

std::string to_string(const TlsTarget& t) {
  return "tls://" + t.endpoint.to_string() + (t.auth_name.empty() ? "" : "#" + t.auth_name);
}

Checked<SpkiPin> parse_tls_pin(std::string_view text) {
  using R = Checked<SpkiPin>;
  constexpr std::string_view kAllowed =
      "expected sha256/BASE64: the base64 SHA-256 of the server's SubjectPublicKeyInfo (44 "
      "characters ending in '='), e.g. from `openssl x509 -pubkey -noout | openssl pkey -pubin "
      "-outform der | openssl dgst -sha256 -binary | base64`";
  if (text.size() != 7 + 44 || text.substr(0, 7) != "sha256/" || text.back() != '=' ||
      text[text.size() - 2] == '=')
    return R::failure(std::string(kAllowed));
  const std::string_view b64 = text.substr(7);
  for (std::size_t i = 0; i + 1 < b64.size(); ++i) {
    const char c = b64[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '/'))
      return R::failure(std::string(kAllowed));
  }
  std::array<unsigned char, 33> out{};
  if (EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(b64.data()),
                      static_cast<int>(b64.size())) != 33)
    return R::failure(std::string(kAllowed));
  SpkiPin pin{};
  std::copy_n(out.begin(), pin.size(), pin.begin());
  return pin;
}

const TlsTarget* DotSettings::find(const Endpoint& e) const noexcept {
  for (const TlsTarget& t : targets)
    if (t.endpoint == e) return &t;
  return nullptr;
}

bool DotSettings::trusts_ad(const Endpoint& e) const noexcept {
  const TlsTarget* t = find(e);
  return t != nullptr && !t->auth_name.empty() &&
         std::find(trust_ad.begin(), trust_ad.end(), e) != trust_ad.end();
}

// --- framing, padding, pending -------------------------------------------------------------

namespace dot {

void StreamReader::feed(std::span<const uint8_t> bytes) {
  if (broken_) return;
  if (start_ > 0 && start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  } else if (start_ > 65536) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

std::optional<std::span<uint8_t>> StreamReader::next() {
  if (broken_) return std::nullopt;
  const std::size_t avail = buf_.size() - start_;
  if (avail < 2) return std::nullopt;
  const std::size_t len = base::load_u16(buf_.data() + start_);
  if (len < kHeader) {
    broken_ = true;
    return std::nullopt;
  }
  if (avail < 2 + len) return std::nullopt;
  const std::span<uint8_t> m(buf_.data() + start_ + 2, len);
  start_ += 2 + len;
  return m;
}

void StreamReader::reset() noexcept {
  buf_.clear();
  start_ = 0;
  broken_ = false;
}

std::size_t pad_query(std::span<uint8_t> buf, std::size_t len, std::size_t block) {
  constexpr std::size_t kOpt = 11;
  if (block == 0 || len < kHeader + kOpt || len > buf.size()) return len;
  if (base::load_u16(buf.data() + 10) == 0) return len;  // ARCOUNT: no OPT record
  const uint8_t* opt = buf.data() + len - kOpt;
  if (opt[0] != 0 || base::load_u16(opt + 1) != 41 || base::load_u16(opt + 9) != 0) return len;
  const std::size_t pad = (block - (len + 4) % block) % block;
  const std::size_t out = len + 4 + pad;
  if (out > buf.size() || out > 65535) return len;
  base::store_u16(buf.data() + len - 2, static_cast<uint16_t>(4 + pad));  // RDLENGTH
  base::store_u16(buf.data() + len, static_cast<uint16_t>(12));           // OPTION-CODE Padding
  base::store_u16(buf.data() + len + 2, static_cast<uint16_t>(pad));
  std::fill(buf.begin() + static_cast<std::ptrdiff_t>(len + 4),
            buf.begin() + static_cast<std::ptrdiff_t>(out), 0);
  return out;
}

bool Pending::add(uint16_t id, std::span<const uint8_t> message, MonoTime deadline) {
  if (message.size() > 65535) return false;
  auto [it, fresh] = entries_.try_emplace(id);
  if (!fresh) return false;
  Entry& e = it->second;
  e.framed.resize(message.size() + 2);
  base::store_u16(e.framed.data(), static_cast<uint16_t>(message.size()));
  std::copy(message.begin(), message.end(), e.framed.begin() + 2);
  e.deadline = deadline;
  e.seq = ++seq_;
  by_deadline_.emplace_back(e.seq, id);
  unwritten_.emplace_back(e.seq, id);
  return true;
}

std::optional<Pending::Entry> Pending::take(uint16_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  Entry e = std::move(it->second);
  entries_.erase(it);
  if (e.written) --written_;
  return e;
}

Pending::Entry* Pending::find(uint16_t id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<uint16_t> Pending::expire(MonoTime now, MonoTime* earliest_written) {
  std::vector<uint16_t> out;
  while (!by_deadline_.empty()) {
    const auto [seq, id] = by_deadline_.front();
    Entry* e = find(id);
    if (e == nullptr || e->seq != seq) {  // answered (the ID may be in use again)
      by_deadline_.pop_front();
      continue;
    }
    if (e->deadline > now) break;
    if (earliest_written != nullptr && e->written && e->written_at < *earliest_written)
      *earliest_written = e->written_at;
    by_deadline_.pop_front();
    take(id);
    out.push_back(id);
  }
  return out;
}

std::optional<MonoTime> Pending::next_deadline() {
  while (!by_deadline_.empty()) {
    const auto [seq, id] = by_deadline_.front();
    Entry* e = find(id);
    if (e != nullptr && e->seq == seq) return e->deadline;
    by_deadline_.pop_front();
  }
  return std::nullopt;
}

std::optional<uint16_t> Pending::next_unwritten() {
  while (!unwritten_.empty()) {
    const auto [seq, id] = unwritten_.front();
    Entry* e = find(id);
    if (e != nullptr && e->seq == seq && !e->written) return id;
    unwritten_.pop_front();
  }
  return std::nullopt;
}

void Pending::mark_written(uint16_t id, MonoTime now) {
  Entry* e = find(id);
  if (e == nullptr || e->written) return;
  e->written = true;
  e->written_at = now;
  ++e->connections;
  ++written_;
}

std::vector<uint16_t> Pending::connection_lost(uint8_t max_connections) {
  std::vector<std::pair<uint64_t, uint16_t>> again;
  std::vector<uint16_t> failed;
  for (auto& [id, e] : entries_) {
    if (!e.written) continue;
    e.written = false;
    if (e.connections >= max_connections) {
      failed.push_back(id);
    } else {
      again.emplace_back(e.seq, id);
    }
  }
  written_ = 0;
  std::sort(again.begin(), again.end());
  unwritten_.insert(unwritten_.begin(), again.begin(), again.end());
  std::sort(failed.begin(), failed.end(),
            [this](uint16_t a, uint16_t b) { return entries_[a].seq < entries_[b].seq; });
  for (uint16_t id : failed)
    take(id);
  return failed;
}

std::vector<uint16_t> Pending::take_all() {
  std::vector<std::pair<uint64_t, uint16_t>> all;
  for (const auto& [id, e] : entries_)
    all.emplace_back(e.seq, id);
  std::sort(all.begin(), all.end());
  entries_.clear();
  by_deadline_.clear();
  unwritten_.clear();
  written_ = 0;
  std::vector<uint16_t> out;
  out.reserve(all.size());
  for (const auto& p : all)
    out.push_back(p.second);
  return out;
}

}  // namespace dot

// --- DotChannel ----------------------------------------------------------------------------

// Debian's whole CA bundle (ca-certificates.crt) is about 220 KiB.
constexpr std::size_t kMaxCaFileBytes = std::size_t{4} << 20;

Checked<std::shared_ptr<void>> DotChannel::make_context(const DotSettings& settings) {
  using R = Checked<std::shared_ptr<void>>;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return R::failure("TLS: cannot create a client context: " + ssl_errors());
  std::shared_ptr<void> owned(ctx, [](void* p) { SSL_CTX_free(static_cast<SSL_CTX*>(p)); });
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);  // RFC 8310 §9, RFC 9325
  if (SSL_CTX_set_default_verify_paths(ctx) != 1)
    return R::failure("TLS: cannot load the system CA store: " + ssl_errors());
  if (!settings.ca_file.empty()) {
    // Read under the rules of every file given by path (base/checked_open.h: no symbolic
    // link, owned by root or the daemon's user, writable by no one else), then parsed from
    // memory: SSL_CTX_load_verify_locations() would open the path again, following links.
    base::SmallFile f = base::read_small_file(settings.ca_file, kMaxCaFileBytes);
    if (f.status != base::SmallFile::Status::Ok) {
      std::string why = f.status == base::SmallFile::Status::Refused ? f.refused
                        : f.status == base::SmallFile::Status::TooLarge
                            ? "is larger than " + std::to_string(kMaxCaFileBytes) + " bytes"
                        : f.status == base::SmallFile::Status::NotRegular
                            ? std::string("is not a regular file")
                            : "cannot be read (" + std::string(std::strerror(f.error)) + ")";
      return R::failure("--tls-ca-file " + settings.ca_file + ": " + why +
                        "; give a readable file of PEM CA certificates");
    }
    int added = 0;
    BIO* mem = BIO_new_mem_buf(f.text.data(), static_cast<int>(f.text.size()));
    STACK_OF(X509_INFO)* infos =
        mem == nullptr ? nullptr : PEM_X509_INFO_read_bio(mem, nullptr, nullptr, nullptr);
    BIO_free(mem);
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (int i = 0; infos != nullptr && i < sk_X509_INFO_num(infos); ++i) {
      X509_INFO* info = sk_X509_INFO_value(infos, i);
      if (info->x509 != nullptr && X509_STORE_add_cert(store, info->x509) == 1) ++added;
    }
    if (infos != nullptr) sk_X509_INFO_pop_free(infos, X509_INFO_free);
    if (added == 0) {
      const std::string why = ssl_errors();
      return R::failure("--tls-ca-file " + settings.ca_file +
                        ": no PEM certificate could be loaded from it (" +
                        (why.empty() ? std::string("none found") : why) +
                        "); give a readable file of PEM CA certificates");
    }
  }
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &DotSessionHook::on_new_session);
  return R(std::move(owned));
}

DotChannel::DotChannel(EventLoop& loop, std::shared_ptr<void> ctx, const DotSettings& settings,
                       TlsTarget target, std::shared_ptr<UpstreamServerStats> stats,
                       Millis lifetime, Sink sink)
    : loop_(loop),
      ctx_(std::move(ctx)),
      settings_(settings),
      target_(std::move(target)),
      stats_(std::move(stats)),
      lifetime_(lifetime),
      sink_(std::move(sink)),
      rbuf_(kReadChunk) {
  stats_->tls.store(true, std::memory_order_relaxed);
}

DotChannel::~DotChannel() {
  *alive_ = false;
  if (timer_) loop_.cancel_timer(timer_);
  close_connection();
  if (session_ != nullptr) SSL_SESSION_free(static_cast<SSL_SESSION*>(session_));
}

bool DotChannel::send(uint16_t id, std::span<const uint8_t> message) {
  if (loop_.now() < held_off_until_) return false;
  if (!pending_.add(id, message, loop_.now() + lifetime_)) return false;
  // Written at the end of the iteration: the queries of one iteration share a system call
  // (one TLS record each, see flush()), and no Sink call can happen inside send().
  if (!kick_scheduled_) {
    kick_scheduled_ = true;
    std::weak_ptr<bool> alive = alive_;
    loop_.at_iteration_end([this, alive] {
      if (alive.expired() || !*alive.lock()) return;
      kick_scheduled_ = false;
      kick();
    });
  }
  arm_timer();
  return true;
}

void DotChannel::kick() {
  if (pending_.size() == 0) return;
  if (state_ == State::Idle) {
    connect();
  } else if (state_ == State::Open) {
    fill_writes();
    flush();
  }
}

void DotChannel::connect() {
  const Endpoint& e = target_.endpoint;
  fd_ = ::socket(e.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    const std::string why = std::string("socket: ") + std::strerror(errno);
    fd_ = -1;
    connect_failed(why);
    return;
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (!loop_.add_fd(fd_, Interest::Write, [this](FdEvents ev) { on_fd(ev); })) {
    ::close(fd_);
    fd_ = -1;
    connect_failed("cannot watch the socket");
    return;
  }
  state_ = State::Connecting;
  connect_started_ = loop_.now();
  arm_timer();  // a connection that never completes gives up at connect_started_ + lifetime_
  if (::connect(fd_, e.sockaddr_ptr(), e.sockaddr_len()) == 0) {
    continue_connect();
    return;
  }
  if (errno != EINPROGRESS) connect_failed(std::string("connect: ") + std::strerror(errno));
}

void DotChannel::on_fd(FdEvents ev) {
  switch (state_) {
    case State::Idle:
      return;
    case State::Connecting:
      continue_connect();
      return;
    case State::Handshaking:
      continue_handshake();
      return;
    case State::Open:
      if (ev.readable || ev.error || ev.hangup) read_all();
      if (state_ == State::Open && ev.writable) flush();
      return;
  }
}

void DotChannel::continue_connect() {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == EINPROGRESS) return;
  if (err != 0) {
    connect_failed(std::string("connect: ") + std::strerror(err));
    return;
  }
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx_.get()));
  if (ssl == nullptr) {
    connect_failed("SSL_new: " + ssl_errors());
    return;
  }
  ssl_ = ssl;
  SSL_set_ex_data(ssl, ex_index(), this);
  // Writes go through a buffering BIO: flush() gives each DNS message a TLS record of its own
  // and sends the records of one iteration with one system call (BIO_flush). Some DoT
  // servers (dnsdist 1.7) read only the first message of a record until more bytes arrive.
  BIO* rsock = BIO_new_socket(fd_, BIO_NOCLOSE);
  BIO* wsock = BIO_new_socket(fd_, BIO_NOCLOSE);
  BIO* wbuffer = BIO_new(BIO_f_buffer());
  if (rsock == nullptr || wsock == nullptr || wbuffer == nullptr ||
      BIO_set_write_buffer_size(wbuffer, kWriteBuffer) != 1) {
    BIO_free(rsock);
    BIO_free(wsock);
    BIO_free(wbuffer);
    connect_failed("cannot set up the TLS connection's buffers: " + ssl_errors());
    return;
  }
  SSL_set_bio(ssl, rsock, BIO_push(wbuffer, wsock));
  if (!target_.auth_name.empty()) {
    // Strict: the chain must verify and name the authentication name (RFC 8310 §5).
    SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
    in6_addr ip{};
    const std::string& n = target_.auth_name;
    const bool literal =
        inet_pton(AF_INET, n.c_str(), &ip) == 1 || inet_pton(AF_INET6, n.c_str(), &ip) == 1;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok =
        literal ? X509_VERIFY_PARAM_set1_ip_asc(param, n.c_str()) : SSL_set1_host(ssl, n.c_str());
    if (!literal)  // SNI (SSL_set_tlsext_host_name, without its C cast)
      SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(n.c_str()));
    if (ok != 1) {
      auth_failed("cannot check the name " + n + ": " + ssl_errors());
      return;
    }
  } else {
    // Authenticated by --tls-pin alone (checked in handshake_done()).
    SSL_set_verify(ssl, SSL_VERIFY_NONE, nullptr);
  }
  if (session_ != nullptr) SSL_set_session(ssl, static_cast<SSL_SESSION*>(session_));
  state_ = State::Handshaking;
  continue_handshake();
}

void DotChannel::continue_handshake() {
  ERR_clear_error();
  const int r = SSL_connect(as_ssl(ssl_));
  if (r == 1) {
    handshake_done();
    return;
  }
  const int err = SSL_get_error(as_ssl(ssl_), r);
  if (err == SSL_ERROR_WANT_READ) {
    loop_.modify_fd(fd_, Interest::Read);
    return;
  }
  if (err == SSL_ERROR_WANT_WRITE) {
    loop_.modify_fd(fd_, Interest::ReadWrite);
    return;
  }
  const long verify = SSL_get_verify_result(as_ssl(ssl_));
  if (verify != X509_V_OK) {
    auth_failed(std::string("certificate not accepted: ") + X509_verify_cert_error_string(verify));
    return;
  }
  connect_failed("TLS handshake failed: " +
                 (err == SSL_ERROR_SYSCALL ? std::string("connection closed") : ssl_errors()));
}

void DotChannel::handshake_done() {
  SSL* ssl = as_ssl(ssl_);
  bump(stats_->tls_handshakes);
  if (SSL_session_reused(ssl) == 1) bump(stats_->tls_resumptions);
  if (!settings_.pins.empty()) {
    X509* cert = SSL_get1_peer_certificate(ssl);
    bool match = false;
    if (cert != nullptr) {
      unsigned char* der = nullptr;
      const int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
      if (n > 0) {
        SpkiPin h{};
        SHA256(der, static_cast<std::size_t>(n), h.data());
        match = std::find(settings_.pins.begin(), settings_.pins.end(), h) != settings_.pins.end();
      }
      OPENSSL_free(der);
      X509_free(cert);
    }
    if (!match) {
      auth_failed("the server's key matches no --tls-pin");
      return;
    }
  }
  stats_->tls_last.store(static_cast<uint8_t>(TlsOutcome::Verified), std::memory_order_relaxed);
  state_ = State::Open;
  written_on_connection_ = 0;
  idle_since_ = loop_.now();
  last_read_ = MonoTime::min();  // nothing read on this connection yet
  fill_writes();
  flush();
  if (state_ == State::Open) arm_timer();
}

void DotChannel::fill_writes() {
  while (pending_.written() < settings_.max_in_flight) {
    const auto id = pending_.next_unwritten();
    if (!id) break;
    dot::Pending::Entry* e = pending_.find(*id);
    wbuf_.insert(wbuf_.end(), e->framed.begin(), e->framed.end());
    pending_.mark_written(*id, loop_.now());
    if (written_on_connection_++ > 0) bump(stats_->tls_reused);
  }
}

void DotChannel::flush() {
  SSL* ssl = as_ssl(ssl_);
  bool want_write = false;
  while (wstart_ < wbuf_.size()) {
    if (wstart_ >= msg_end_)  // the next framed message: one SSL_write, its own record(s)
      msg_end_ = std::min(wbuf_.size(), wstart_ + 2 + base::load_u16(wbuf_.data() + wstart_));
    const std::size_t len = retry_len_ != 0 ? retry_len_ : msg_end_ - wstart_;
    ERR_clear_error();
    const int n = SSL_write(ssl, wbuf_.data() + wstart_, static_cast<int>(len));
    if (n > 0) {
      wstart_ += static_cast<std::size_t>(n);
      retry_len_ = 0;
      continue;
    }
    const int err = SSL_get_error(ssl, n);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
      retry_len_ = len;
      want_write = err == SSL_ERROR_WANT_WRITE;
      break;
    }
    connection_failed("write failed: " + (err == SSL_ERROR_SYSCALL
                                              ? std::string(std::strerror(errno))
                                              : ssl_errors()));
    return;
  }
  if (wstart_ == wbuf_.size()) {
    wbuf_.clear();
    wstart_ = 0;
    msg_end_ = 0;
  }
  if (!want_write) {  // every record is in the buffering BIO: send them
    BIO* wbio = SSL_get_wbio(ssl);
    if (BIO_flush(wbio) != 1) {
      if (!BIO_should_retry(wbio)) {
        connection_failed("write failed: " + std::string(std::strerror(errno)));
        return;
      }
      want_write = true;
    }
  }
  loop_.modify_fd(fd_, want_write ? Interest::ReadWrite : Interest::Read);
}

void DotChannel::read_all() {
  SSL* ssl = as_ssl(ssl_);
  bool answered = false;
  for (int i = 0; i < kReadsPerWake && state_ == State::Open; ++i) {
    ERR_clear_error();
    const int n = SSL_read(ssl, rbuf_.data(), static_cast<int>(rbuf_.size()));
    if (n <= 0) {
      const int err = SSL_get_error(ssl, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) break;
      if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && pending_.size() == 0)) {
        // The server closed (its idle timeout, a restart): the next query reconnects.
        connection_failed("closed by the server");
      } else {
        connection_failed("read failed: " + (err == SSL_ERROR_SYSCALL
                                                 ? std::string("connection reset or closed")
                                                 : ssl_errors()));
      }
      return;
    }
    reader_.feed(std::span<const uint8_t>(rbuf_.data(), static_cast<std::size_t>(n)));
    last_read_ = loop_.now();
    while (auto m = reader_.next()) {
      const uint16_t id = base::load_u16(m->data());
      if (!pending_.take(id)) {
        bump(stats_->dropped_wrong_id);  // late (its deadline passed) or never asked
        continue;
      }
      answered = true;
      idle_since_ = loop_.now();
      last_read_ = loop_.now();
      sink_(id, Event::Answer, *m);
    }
    if (reader_.broken()) {
      connection_failed("a message shorter than a DNS header in the stream");
      return;
    }
  }
  if (answered && state_ == State::Open) {
    fill_writes();  // room for queries waiting on the in-flight bound
    if (!wbuf_.empty() || BIO_wpending(SSL_get_wbio(ssl)) > 0) flush();
  }
  arm_timer();
}

void DotChannel::close_connection() {
  if (ssl_ != nullptr) {
    SSL_free(as_ssl(ssl_));
    ssl_ = nullptr;
  }
  if (fd_ >= 0) {
    loop_.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  state_ = State::Idle;
  wbuf_.clear();
  wstart_ = 0;
  msg_end_ = 0;
  retry_len_ = 0;
  reader_.reset();
}

void DotChannel::connection_failed(const std::string& why) {
  const bool was_open = state_ == State::Open;
  close_connection();
  if (!was_open) {
    connect_failed(why);
    return;
  }
  // Written and unanswered: once more on a new connection (the server restarted, or closed
  // an idle connection as we wrote); those already given a second chance fail.
  auto failed = pending_.connection_lost(kMaxConnectionsPerQuery);
  if (pending_.size() > 0 || !failed.empty()) {
    bump(stats_->tls_connection_failures);
    log_once("connection lost: " + why);
  }
  fail(failed, Event::NetworkError);
  if (pending_.size() > 0 && state_ == State::Idle) connect();
}

void DotChannel::connect_failed(const std::string& why) {
  close_connection();
  bump(stats_->tls_connection_failures);
  stats_->tls_last.store(static_cast<uint8_t>(TlsOutcome::ConnectFailed),
                         std::memory_order_relaxed);
  log_once(why);
  fail(pending_.take_all(), Event::NetworkError);
  arm_timer();
}

void DotChannel::auth_failed(const std::string& why) {
  close_connection();
  bump(stats_->tls_verify_failures);
  stats_->tls_last.store(static_cast<uint8_t>(TlsOutcome::AuthFailed), std::memory_order_relaxed);
  held_off_until_ = loop_.now() + settings_.auth_holdoff;
  log_once(why + "; nothing is sent to it (not in clear either) for " +
           std::to_string(settings_.auth_holdoff.count()) + " ms");
  fail(pending_.take_all(), Event::AuthFailed);
  arm_timer();
}

void DotChannel::fail(const std::vector<uint16_t>& ids, Event event) {
  std::weak_ptr<bool> alive = alive_;
  for (uint16_t id : ids) {
    sink_(id, event, {});
    if (alive.expired()) return;
  }
}

void DotChannel::log_once(const std::string& what) {
  if (what == last_logged_) return;
  last_logged_ = what;
  log::print(log::Level::Warning, "upstream {}: {}", to_string(target_), what);
}

void DotChannel::arm_timer() {
  std::optional<MonoTime> at = pending_.next_deadline();
  if (state_ == State::Connecting || state_ == State::Handshaking) {
    const MonoTime give_up = connect_started_ + lifetime_;
    if (!at || give_up < *at) at = give_up;
  }
  if (state_ == State::Open && pending_.size() == 0) {
    const MonoTime idle = idle_since_ + settings_.idle_timeout;
    if (!at || idle < *at) at = idle;
  }
  if (!at) {
    if (timer_) loop_.cancel_timer(timer_);
    timer_ = {};
    return;
  }
  if (timer_ && timer_at_ == *at) return;
  if (timer_) loop_.cancel_timer(timer_);
  timer_at_ = *at;
  timer_ = loop_.add_timer_at(*at, [this] {
    timer_ = {};
    on_timer();
  });
}

void DotChannel::on_timer() {
  const MonoTime now = loop_.now();
  MonoTime earliest_written = MonoTime::max();
  auto expired = pending_.expire(now, &earliest_written);
  if (!expired.empty()) {
    std::weak_ptr<bool> alive = alive_;
    fail(expired, Event::Timeout);
    if (alive.expired()) return;
  }
  if ((state_ == State::Connecting || state_ == State::Handshaking) &&
      now >= connect_started_ + lifetime_) {
    // A server that accepts and never completes the handshake: the next query starts over.
    connect_failed("no TLS connection within " + std::to_string(lifetime_.count()) + " ms");
    return;
  }
  if (state_ == State::Open && earliest_written != MonoTime::max() &&
      last_read_ <= earliest_written) {
    // A query ran out of its lifetime on this connection and nothing has come back on it
    // since it was written: a stalled server or a dead path. The queries still waiting go
    // to a new connection (once), later ones too.
    connection_failed("no answer for " + std::to_string(lifetime_.count()) + " ms");
    return;
  }
  if (state_ == State::Open && pending_.size() == 0 &&
      now >= idle_since_ + settings_.idle_timeout) {
    // Idle: close politely (one close_notify, not waited for); the session stays for
    // resumption on the next connection.
    ERR_clear_error();
    SSL_shutdown(as_ssl(ssl_));
    close_connection();
  }
  arm_timer();
}

void DotChannel::cancel_all() {
  fail(pending_.take_all(), Event::Cancelled);
  arm_timer();
}

std::vector<uint16_t> DotChannel::abandon() {
  return pending_.take_all();
}

}  // namespace hg::resolver
