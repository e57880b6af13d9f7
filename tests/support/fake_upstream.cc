// FakeUpstream implementation: one poll() thread over a UDP socket, a TCP listener, its TCP
// connections and an eventfd for stop(). Delayed replies wait in a list checked each round.
#include "tests/support/fake_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/bytes.h"
#include "base/hash.h"

namespace hg::test {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "FakeUpstream: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

std::string normalise(std::string_view name) {
  std::string s(name);
  if (!s.empty() && s.back() == '.') s.pop_back();
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Uncompressed wire form of a dotted name; "" and "." are the root.
void put_name(std::vector<uint8_t>& out, std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  while (!name.empty()) {
    auto dot = name.find('.');
    std::string_view label = name.substr(0, dot);
    out.push_back(static_cast<uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    name = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
  }
  out.push_back(0);
}

std::vector<uint8_t> name_bytes(std::string_view name) {
  std::vector<uint8_t> out;
  put_name(out, name);
  return out;
}

// Parses the question of a query; returns the offset just past QCLASS, or 0 if malformed.
std::size_t parse_question(const std::vector<uint8_t>& q, std::string& qname, uint16_t& qtype) {
  if (q.size() < 12 || base::load_u16(&q[4]) < 1) return 0;
  std::size_t at = 12;
  qname.clear();
  while (true) {
    if (at >= q.size()) return 0;
    uint8_t len = q[at++];
    if (len == 0) break;
    if (len > 63 || at + len > q.size()) return 0;  // no compression in our own queries
    if (!qname.empty()) qname += '.';
    for (std::size_t i = 0; i < len; ++i) {
      qname += static_cast<char>(std::tolower(q[at + i]));
    }
    at += len;
  }
  if (at + 4 > q.size()) return 0;
  qtype = base::load_u16(&q[at]);
  return at + 4;
}

// Whether an OPT record follows the question (our queries carry no answer/authority).
bool has_opt(const std::vector<uint8_t>& q, std::size_t question_end) {
  if (base::load_u16(&q[10]) < 1) return false;
  return question_end + 3 <= q.size() && q[question_end] == 0 &&
         base::load_u16(&q[question_end + 1]) == 41;
}

void put_record(std::vector<uint8_t>& out, const FakeRecord& r) {
  if (r.name.empty()) {
    base::append_u16(out, 0xC00C);  // pointer to the question name at offset 12
  } else {
    put_name(out, r.name);
  }
  base::append_u16(out, r.type);
  base::append_u16(out, 1);  // IN
  base::append_u32(out, r.ttl);
  base::append_u16(out, static_cast<uint16_t>(r.rdata.size()));
  out.insert(out.end(), r.rdata.begin(), r.rdata.end());
}

}  // namespace

// --- records and replies ---------------------------------------------------------------------

FakeRecord FakeRecord::a(std::string name, uint32_t ttl, std::string_view ipv4) {
  in_addr a{};
  if (inet_pton(AF_INET, std::string(ipv4).c_str(), &a) != 1) std::abort();
  std::vector<uint8_t> rd(4);
  std::memcpy(rd.data(), &a, 4);
  return FakeRecord{std::move(name), 1, ttl, std::move(rd)};
}

FakeRecord FakeRecord::aaaa(std::string name, uint32_t ttl, std::string_view ipv6) {
  in6_addr a{};
  if (inet_pton(AF_INET6, std::string(ipv6).c_str(), &a) != 1) std::abort();
  std::vector<uint8_t> rd(16);
  std::memcpy(rd.data(), &a, 16);
  return FakeRecord{std::move(name), 28, ttl, std::move(rd)};
}

FakeRecord FakeRecord::cname(std::string name, uint32_t ttl, std::string_view target) {
  return FakeRecord{std::move(name), 5, ttl, name_bytes(target)};
}

FakeRecord FakeRecord::soa(std::string zone, uint32_t ttl, uint32_t minimum) {
  std::string z = normalise(zone);
  std::vector<uint8_t> rd;
  put_name(rd, z.empty() ? "ns" : "ns." + z);
  put_name(rd, z.empty() ? "hostmaster" : "hostmaster." + z);
  base::append_u32(rd, 1);      // serial
  base::append_u32(rd, 3600);   // refresh
  base::append_u32(rd, 600);    // retry
  base::append_u32(rd, 86400);  // expire
  base::append_u32(rd, minimum);
  return FakeRecord{std::move(zone), 6, ttl, std::move(rd)};
}

FakeReply FakeReply::records(std::vector<FakeRecord> answer) {
  FakeReply r;
  r.answer = std::move(answer);
  return r;
}

FakeReply FakeReply::nxdomain(FakeRecord soa) {
  FakeReply r;
  r.rcode = 3;
  r.authority.push_back(std::move(soa));
  return r;
}

FakeReply FakeReply::nodata(FakeRecord soa) {
  FakeReply r;
  r.authority.push_back(std::move(soa));
  return r;
}

FakeReply FakeReply::servfail() {
  FakeReply r;
  r.rcode = 2;
  return r;
}

FakeReply FakeReply::refused() {
  FakeReply r;
  r.rcode = 5;
  return r;
}

FakeReply FakeReply::dropped() {
  FakeReply r;
  r.drop = true;
  return r;
}

// --- server ----------------------------------------------------------------------------------

struct FakeUpstream::Pending {
  Clock::time_point due;
  Transport transport;
  uint64_t conn_id;  // TCP
  sockaddr_storage peer;
  socklen_t peer_len;
  std::vector<uint8_t> bytes;
};

struct FakeUpstream::Connection {
  int fd;
  uint64_t id;
  bool mute;
  std::vector<uint8_t> buf;
};

FakeUpstream::FakeUpstream(const char* ip) : ip_(ip) {
  for (int attempt = 0; attempt < 50 && tcp_fd_ < 0; ++attempt) {
    udp_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (udp_fd_ < 0) die("socket(udp)");
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1 || (ntohl(sin.sin_addr.s_addr) >> 24) != 127)
      die("FakeUpstream: expected a 127.0.0.0/8 address");
    if (bind(udp_fd_, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) die("bind(udp)");
    socklen_t len = sizeof sin;
    getsockname(udp_fd_, reinterpret_cast<sockaddr*>(&sin), &len);
    port_ = ntohs(sin.sin_port);
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (tcp < 0) die("socket(tcp)");
    int one = 1;
    setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(tcp, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0 && listen(tcp, 64) == 0) {
      tcp_fd_ = tcp;
    } else {
      close(tcp);  // that port is taken for TCP: try another UDP port
      close(udp_fd_);
      udp_fd_ = -1;
    }
  }
  if (tcp_fd_ < 0) die("no port free for both UDP and TCP");
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) die("eventfd");
  thread_ = std::thread([this] { serve(); });
}

FakeUpstream::~FakeUpstream() {
  stop();
}

std::string FakeUpstream::address() const {
  return ip_ + ":" + std::to_string(port_);
}

void FakeUpstream::set_default(FakeReply reply) {
  std::lock_guard lock(mu_);
  default_ = std::move(reply);
}

void FakeUpstream::on(std::string_view qname, FakeReply reply) {
  std::lock_guard lock(mu_);
  script_[normalise(qname)] = std::move(reply);
}

void FakeUpstream::set_tcp_mute(bool mute) {
  std::lock_guard lock(mu_);
  tcp_mute_ = mute;
}

void FakeUpstream::set_formerr_to_edns(bool on) {
  std::lock_guard lock(mu_);
  formerr_to_edns_ = on;
}

void FakeUpstream::set_loss(double p, uint64_t seed) {
  std::lock_guard lock(mu_);
  loss_ = p;
  loss_seed_ = seed;
}

bool FakeUpstream::loses(double p, uint64_t seed, std::string_view qname, std::size_t n) {
  // FNV-1a over the name, then a splitmix64 finaliser over (seed, name, n).
  uint64_t h = base::kFnv1aBasis;
  for (char ch : normalise(qname))
    h = base::fnv1a_step(h, static_cast<uint8_t>(ch));
  uint64_t z = seed ^ h ^ (static_cast<uint64_t>(n) * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(uint64_t{1} << 53) < p;
}

void FakeUpstream::set_scramble_case(bool on) {
  std::lock_guard lock(mu_);
  scramble_case_ = on;
}

void FakeUpstream::set_forge_wrong_case(std::optional<FakeRecord> forged) {
  std::lock_guard lock(mu_);
  forged_ = std::move(forged);
}

void FakeUpstream::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (auto& c : conns_)
    close(c.fd);
  conns_.clear();
  close(udp_fd_);
  close(tcp_fd_);
  close(wake_fd_);
}

std::size_t FakeUpstream::queries(std::string_view qname, Transport transport) const {
  std::string n = normalise(qname);
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count_if(
      received_.begin(), received_.end(),
      [&](const ReceivedQuery& q) { return q.qname == n && q.transport == transport; }));
}

std::size_t FakeUpstream::queries(std::string_view qname) const {
  return queries(qname, Transport::Udp) + queries(qname, Transport::Tcp);
}

std::size_t FakeUpstream::total_queries() const {
  std::lock_guard lock(mu_);
  return received_.size();
}

std::vector<ReceivedQuery> FakeUpstream::received() const {
  std::lock_guard lock(mu_);
  return received_;
}

void FakeUpstream::reset_counts() {
  std::lock_guard lock(mu_);
  received_.clear();
}

FakeReply FakeUpstream::script_for(const std::string& qname) const {
  std::lock_guard lock(mu_);
  auto it = script_.find(qname);
  return it != script_.end() ? it->second : default_;
}

std::vector<uint8_t> FakeUpstream::build(const std::vector<uint8_t>& q, std::size_t question_end,
                                         const FakeReply& reply, Transport t) const {
  bool tc = reply.truncate_udp && t == Transport::Udp;
  bool opt = has_opt(q, question_end);
  std::vector<uint8_t> out;
  base::append_u16(out, static_cast<uint16_t>(base::load_u16(&q[0]) ^ reply.id_xor));  // ID
  // QR=1, the query's opcode and RD, AA if scripted, TC; RA=1, RCODE.
  uint8_t b2 = static_cast<uint8_t>(0x80 | (q[2] & 0x79) | (reply.aa ? 0x04 : 0) | (tc ? 0x02 : 0));
  out.push_back(b2);
  out.push_back(static_cast<uint8_t>(0x80 | (reply.ad ? 0x20 : 0) | (reply.rcode & 0x0f)));
  base::append_u16(out, reply.question_twice ? 2 : 1);
  base::append_u16(out, tc ? 0 : static_cast<uint16_t>(reply.answer.size()));
  base::append_u16(out, tc ? 0 : static_cast<uint16_t>(reply.authority.size()));
  base::append_u16(out, opt ? 1 : 0);
  if (reply.wrong_question) {
    put_name(out, "wrong.invalid");
    out.insert(out.end(), q.begin() + static_cast<std::ptrdiff_t>(question_end) - 4,
               q.begin() + static_cast<std::ptrdiff_t>(question_end));
  } else {
    out.insert(out.end(), q.begin() + 12, q.begin() + static_cast<std::ptrdiff_t>(question_end));
  }
  if (reply.question_twice)
    out.insert(out.end(), q.begin() + 12, q.begin() + static_cast<std::ptrdiff_t>(question_end));
  if (!tc) {
    for (const auto& r : reply.answer)
      put_record(out, r);
    for (const auto& r : reply.authority)
      put_record(out, r);
  }
  if (opt) {
    out.push_back(0);             // root
    base::append_u16(out, 41);    // OPT
    base::append_u16(out, 1232);  // payload size
    base::append_u32(out, 0);     // extended RCODE, version, flags
    base::append_u16(out, 0);     // no options
  }
  return out;
}

void FakeUpstream::handle(Transport t, std::vector<uint8_t> query, int fd, const void* peer,
                          unsigned peer_len) {
  ReceivedQuery rq{t, 0, {}, {}, 0, false, query, 0};
  if (t == Transport::Udp && peer != nullptr && peer_len >= sizeof(sockaddr_in)) {
    rq.source_port = ntohs(static_cast<const sockaddr_in*>(peer)->sin_port);
  } else if (t == Transport::Tcp) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_INET)
      rq.source_port = ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  }
  std::size_t qend = parse_question(query, rq.qname, rq.qtype);
  if (qend == 0) return;
  rq.id = base::load_u16(&query[0]);
  rq.has_opt = has_opt(query, qend);
  for (std::size_t at = 12; at < qend && query[at] != 0; at += 1 + query[at]) {
    if (!rq.qname_raw.empty()) rq.qname_raw += '.';
    rq.qname_raw.append(reinterpret_cast<const char*>(query.data()) + at + 1, query[at]);
  }
  std::string qname = rq.qname;
  const bool opt = rq.has_opt;
  bool lost = false, formerr = false, scramble = false;
  std::optional<FakeRecord> forged;
  {
    std::lock_guard lock(mu_);
    received_.push_back(std::move(rq));
    if (t == Transport::Udp && loss_ > 0)
      lost = loses(loss_, loss_seed_, qname, udp_seen_[qname]++);
    formerr = formerr_to_edns_ && opt;
    scramble = scramble_case_;
    forged = forged_;
  }
  if (lost) return;
  FakeReply reply = script_for(qname);
  if (formerr) {
    reply = FakeReply{};
    reply.rcode = 1;
  }
  if (reply.drop) return;
  // Inverts the case of every letter of the question name in an answer we built.
  auto invert_case = [qend](std::vector<uint8_t>& b) {
    for (std::size_t i = 12; i + 4 < qend && i < b.size(); ++i) {
      if (std::isalpha(b[i])) b[i] = static_cast<uint8_t>(b[i] ^ 0x20);
    }
  };
  Pending p{};
  p.due = Clock::now() + reply.delay;
  p.transport = t;
  p.bytes = build(query, qend, reply, t);
  if (formerr) {
    // FORMERR without OPT: header and question only.
    p.bytes.resize(qend);
    p.bytes[10] = 0;
    p.bytes[11] = 0;
  }
  if (scramble) invert_case(p.bytes);
  if (forged && t == Transport::Udp) {
    Pending f{};
    f.due = Clock::now();
    f.transport = t;
    f.bytes = build(query, qend, FakeReply::records({*forged}), t);
    invert_case(f.bytes);
    std::memcpy(&f.peer, peer, peer_len);
    f.peer_len = peer_len;
    if (p.due < f.due) p.due = f.due;
    pending_.push_back(std::move(f));
  }
  if (t == Transport::Udp) {
    std::memcpy(&p.peer, peer, peer_len);
    p.peer_len = peer_len;
    if (reply.to_port != 0 && p.peer.ss_family == AF_INET)
      reinterpret_cast<sockaddr_in*>(&p.peer)->sin_port = htons(reply.to_port);
  } else {
    p.conn_id = static_cast<uint64_t>(fd);
    for (const auto& c : conns_) {
      if (c.fd == fd) p.conn_id = c.id;
    }
  }
  pending_.push_back(std::move(p));
}

void FakeUpstream::serve() {
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    // Send what is due.
    auto now = Clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->due > now) {
        ++it;
        continue;
      }
      if (it->transport == Transport::Udp) {
        sendto(udp_fd_, it->bytes.data(), it->bytes.size(), 0,
               reinterpret_cast<const sockaddr*>(&it->peer), it->peer_len);
      } else {
        for (const auto& c : conns_) {
          if (c.id != it->conn_id) continue;
          std::vector<uint8_t> framed;
          base::append_u16(framed, static_cast<uint16_t>(it->bytes.size()));
          framed.insert(framed.end(), it->bytes.begin(), it->bytes.end());
          [[maybe_unused]] ssize_t n = ::send(c.fd, framed.data(), framed.size(), MSG_NOSIGNAL);
        }
      }
      it = pending_.erase(it);
    }
    int timeout = -1;
    for (const auto& p : pending_) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(p.due - now).count();
      int t = static_cast<int>(std::max<long long>(ms, 0));
      if (timeout < 0 || t < timeout) timeout = t;
    }

    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({udp_fd_, POLLIN, 0});
    fds.push_back({tcp_fd_, POLLIN, 0});
    for (const auto& c : conns_)
      fds.push_back({c.fd, static_cast<short>(c.mute ? 0 : POLLIN), 0});
    if (poll(fds.data(), fds.size(), timeout) < 0) continue;

    if (fds[1].revents & POLLIN) {
      uint8_t buf[65536];
      sockaddr_storage peer{};
      socklen_t plen = sizeof peer;
      ssize_t n;
      while ((n = recvfrom(udp_fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&peer),
                           &plen)) >= 0) {
        handle(Transport::Udp, std::vector<uint8_t>(buf, buf + n), udp_fd_, &peer, plen);
        plen = sizeof peer;
      }
    }
    if (fds[2].revents & POLLIN) {
      int c;
      while ((c = accept4(tcp_fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) {
        bool mute;
        {
          std::lock_guard lock(mu_);
          mute = tcp_mute_;
        }
        conns_.push_back(Connection{c, next_conn_id_++, mute, {}});
      }
    }
    // TCP connections (indices 3.. match conns_ as it was when fds was built).
    std::vector<uint64_t> closed;
    std::size_t nconns = fds.size() - 3;
    for (std::size_t i = 0; i < nconns; ++i) {
      if (!(fds[3 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Connection& c = conns_[i];
      uint8_t buf[4096];
      ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        closed.push_back(c.id);
        continue;
      }
      c.buf.insert(c.buf.end(), buf, buf + n);
      while (c.buf.size() >= 2) {
        std::size_t len = base::load_u16(c.buf.data());
        if (c.buf.size() < 2 + len) break;
        std::vector<uint8_t> msg(c.buf.begin() + 2,
                                 c.buf.begin() + 2 + static_cast<std::ptrdiff_t>(len));
        c.buf.erase(c.buf.begin(), c.buf.begin() + 2 + static_cast<std::ptrdiff_t>(len));
        handle(Transport::Tcp, std::move(msg), c.fd, nullptr, 0);
      }
    }
    for (uint64_t id : closed) {
      auto it = std::find_if(conns_.begin(), conns_.end(),
                             [id](const Connection& c) { return c.id == id; });
      if (it != conns_.end()) {
        close(it->fd);
        conns_.erase(it);
      }
    }
  }
}

}  // namespace hg::test
