// Daemon process control and the code-side DNS client for the integration tests.
#include "tests/integration/daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/bytes.h"
#include "tests/support/command.h"
#include "tests/support/ports.h"
#include "wire/edns.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/print.h"
#include "wire/rdata.h"
#include "wire/writer.h"

#ifndef HOURGLASSD
#error "HOURGLASSD (path of the daemon binary) must be defined by the build"
#endif
namespace hg::integration {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t random_u32() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
    v = static_cast<uint32_t>(std::rand());
  return v;
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Reads exactly n bytes from a blocking-with-poll socket before the deadline.
bool read_full(int fd, uint8_t* p, std::size_t n, Clock::time_point deadline) {
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, remaining_ms(deadline)) <= 0) return false;
    ssize_t got = recv(fd, p, n, 0);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

// --- queries and answers -----------------------------------------------------------------

Bytes build_query(const Query& q) {
  Bytes buf(512);
  wire::WireWriter w(buf);
  wire::Header h;
  h.id = q.id ? *q.id : static_cast<uint16_t>(random_u32());
  h.flags = q.flags;
  h.set_opcode(static_cast<wire::Opcode>(q.opcode));
  h.qdcount = 1;
  h.write_unchecked(buf.data());
  auto name = wire::Name::from_text(q.name);
  if (!name) std::abort();
  bool ok = w.bytes(std::span<const uint8_t>(buf.data(), wire::kHeaderSize)) &&
            w.name(*name, false) && w.u16(q.type) && w.u16(q.klass);
  if (ok && q.edns) {
    wire::OptSpec opt;
    opt.udp_size = q.udp_size;
    opt.version = q.edns_version;
    opt.flags = q.dnssec_ok ? wire::kEdnsDoBit : 0;
    ok = wire::append_opt(w, opt);
  }
  if (!ok) std::abort();
  buf.resize(w.size());
  return buf;
}

std::optional<Answer> parse_answer(Bytes bytes) {
  wire::Message m;
  if (!m.parse(bytes, wire::ParseMode::Lenient).has_value()) return std::nullopt;
  auto owned = wire::to_owned(m);
  if (!owned) return std::nullopt;
  Answer a;
  a.msg = std::move(owned.value());
  a.bytes = std::move(bytes);
  return a;
}

std::optional<uint16_t> Answer::ede() const {
  if (!msg.edns) return std::nullopt;
  for (const auto& o : msg.edns->options) {
    if (o.code == wire::edns_option::ExtendedError && o.data.size() >= 2)
      return base::load_u16(&o.data[0]);
  }
  return std::nullopt;
}

std::vector<uint32_t> Answer::ttls(wire::Section s) const {
  std::vector<uint32_t> out;
  for (const auto& r : msg.section(s))
    out.push_back(r.ttl);
  return out;
}

std::optional<Bytes> Answer::question_bytes(const Bytes& message) {
  wire::Message m;
  if (!m.parse(message, wire::ParseMode::Lenient).has_value() || m.questions().size() != 1)
    return std::nullopt;
  const auto& q = m.questions()[0];
  return Bytes(message.begin() + q.offset, message.begin() + q.end);
}

std::string Answer::text() const {
  return wire::print_message(msg);
}

UdpClient::UdpClient(const char* from) {
  sockaddr_in bound{};
  fd_ = test::bind_any_port(SOCK_DGRAM | SOCK_NONBLOCK, bound, from);
}

UdpClient::~UdpClient() {
  if (fd_ >= 0) close(fd_);
}

bool UdpClient::send(uint16_t port, const Bytes& query) {
  if (fd_ < 0) return false;
  sockaddr_in to = test::ipv4_address("127.0.0.1", port);
  return sendto(fd_, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
         static_cast<ssize_t>(query.size());
}

std::optional<Bytes> UdpClient::receive(Millis timeout) {
  if (fd_ < 0) return std::nullopt;
  pollfd pfd{fd_, POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  Bytes buf(65535);
  ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
  if (n < 0) return std::nullopt;
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

std::optional<Answer> udp_query(uint16_t port, const Bytes& query, Millis timeout,
                                const char* from) {
  UdpClient c(from);
  if (!c.send(port, query)) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto got = c.receive(Millis{remaining_ms(deadline)});
    if (!got) return std::nullopt;
    if (got->size() >= 2 && (*got)[0] == query[0] && (*got)[1] == query[1])
      return parse_answer(std::move(*got));
  }
  return std::nullopt;
}

std::optional<Answer> tcp_query(uint16_t port, const Bytes& query, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  const int fd = test::connect_tcp(test::ipv4_address("127.0.0.1", port));
  if (fd < 0) return std::nullopt;
  std::optional<Answer> result;
  Bytes framed;
  framed.push_back(static_cast<uint8_t>(query.size() >> 8));
  framed.push_back(static_cast<uint8_t>(query.size()));
  framed.insert(framed.end(), query.begin(), query.end());
  uint8_t len[2];
  if (send(fd, framed.data(), framed.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(framed.size()) &&
      read_full(fd, len, 2, deadline)) {
    Bytes buf(static_cast<std::size_t>(base::load_u16(&len[0])));
    if (read_full(fd, buf.data(), buf.size(), deadline)) result = parse_answer(std::move(buf));
  }
  close(fd);
  return result;
}

std::vector<std::string> a_records(const Answer& a) {
  std::vector<std::string> out;
  for (const auto& rr : a.msg.section(wire::Section::Answer)) {
    if (const auto* v4 = std::get_if<wire::RdataA>(&rr.rdata)) {
      const auto& b = v4->address;
      out.push_back(std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) +
                    "." + std::to_string(b[3]));
    }
  }
  return out;
}

std::map<std::string, TimedAnswer> ask_all(uint16_t port, const std::vector<std::string>& names,
                                           std::size_t window, Millis wait) {
  std::map<std::string, TimedAnswer> got;
  for (std::size_t start = 0; start < names.size(); start += window) {
    UdpClient client;
    std::map<uint16_t, std::pair<std::string, Clock::time_point>> pending;
    for (std::size_t i = start; i < names.size() && i < start + window; ++i) {
      const auto id = static_cast<uint16_t>(i + 1);
      if (client.send(port, build_query({.name = names[i], .id = id})))
        pending[id] = {names[i], Clock::now()};
    }
    const auto deadline = Clock::now() + wait;
    while (!pending.empty() && Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
      auto bytes = client.receive(std::max(left, Millis{1}));
      if (!bytes) break;
      auto a = parse_answer(*bytes);
      if (!a) continue;
      const auto it = pending.find(a->id());
      if (it == pending.end()) continue;
      const double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - it->second.second).count();
      got.emplace(it->second.first, TimedAnswer{std::move(*a), ms});
      pending.erase(it);
    }
  }
  return got;
}

// --- dig ------------------------------------------------------------------------------------

std::string DigResult::status() const {
  auto at = output.find("status: ");
  if (at == std::string::npos) return "";
  at += 8;
  auto end = output.find(',', at);
  return output.substr(at, end - at);
}

std::string DigResult::flags() const {
  auto at = output.find(";; flags: ");
  if (at == std::string::npos) return "";
  at += 10;
  auto end = output.find(';', at);
  return output.substr(at, end - at);
}

std::vector<uint32_t> DigResult::ttls(std::string_view section) const {
  std::vector<uint32_t> out;
  const std::string header = ";; " + std::string(section) + " SECTION:";
  auto at = output.find(header);
  if (at == std::string::npos) return out;
  std::istringstream in(output.substr(at + header.size()));
  std::string line;
  std::getline(in, line);  // rest of the header line
  while (std::getline(in, line) && !line.empty() && line[0] != ';') {
    std::istringstream fields(line);
    std::string owner;
    uint32_t ttl = 0;
    if (fields >> owner >> ttl) out.push_back(ttl);
  }
  return out;
}

DigResult dig(uint16_t port, const std::string& args, int time_seconds) {
  // dig is the client: its clock does not matter, and under scripts/test-ahead the libfaketime
  // it would inherit through LD_PRELOAD breaks bind9's libraries (clock_gettime recursion).
  const auto c =
      test::run_command("env -u LD_PRELOAD dig @127.0.0.1 -p " + std::to_string(port) +
                            " +time=" + std::to_string(time_seconds) + " +tries=1 " + args,
                        20);
  DigResult r;
  r.output = c.output;
  r.exit_code = c.exit_code;
  return r;
}

// --- the daemon process ----------------------------------------------------------------------

std::unique_ptr<Daemon> Daemon::start(std::vector<std::string> args, bool add_listen) {
  return start_with(std::move(args), StartOptions{.add_listen = add_listen});
}

std::unique_ptr<Daemon> Daemon::start_with(std::vector<std::string> args,
                                           const StartOptions& options) {
  bool has_listen = false;
  bool has_dnssec = false;
  bool has_user = false;
  for (const auto& a : args) {
    has_listen = has_listen || a == "--listen";
    has_dnssec = has_dnssec || a == "--dnssec" || a.starts_with("--dnssec=");
    has_user = has_user || a == "--user" || a.starts_with("--user=") || a == "--allow-root" ||
               a.starts_with("--allow-root=");
  }
  if (options.dnssec_off && !has_dnssec) {
    args.emplace_back("--dnssec");
    args.emplace_back("off");
  }
  if (options.test_zone_upstream) {
    args.emplace_back("--no-special-zone");
    args.emplace_back("test");
  }
  if (options.allow_root && !has_user) args.emplace_back("--allow-root");
  if (options.add_listen && !has_listen) {
    args.insert(args.begin(), "127.0.0.1:0");
    args.insert(args.begin(), "--listen");
  }
  std::unique_ptr<Daemon> d(new Daemon());
  d->spawn(args, options);
  if (d->pid_ < 0 || !options.wait_ready) return d;
  if (!d->wait_listening(Millis{5000})) return d;
  d->ready_ = d->wait_ready(Millis{5000});
  return d;
}

bool Daemon::wait_listening(Millis timeout) {
  // The first line names the bound addresses: "...: listening on A:P B:P (udp+tcp); ...".
  const std::string marker = "listening on ";
  if (!wait_for_output(" (udp+tcp)", timeout)) return false;
  const std::string out = output();
  auto at = out.find(marker);
  auto end = out.find(" (udp+tcp)");
  if (at == std::string::npos || end == std::string::npos || end < at) return false;
  std::istringstream addrs(out.substr(at + marker.size(), end - at - marker.size()));
  std::string a;
  listen_.clear();
  while (addrs >> a)
    listen_.push_back(a);
  if (listen_.empty()) return false;
  const auto colon = listen_[0].rfind(':');
  port_ = static_cast<uint16_t>(std::stoul(listen_[0].substr(colon + 1)));
  return true;
}

void Daemon::spawn(const std::vector<std::string>& args, const StartOptions& options) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  std::vector<std::string> argv_s;
  argv_s.push_back(HOURGLASSD);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  // The environment: ours, with options.env set on top; built before fork (the child may only
  // make async-signal-safe calls), with a buffer for WATCHDOG_PID, which needs the child's PID.
  std::vector<std::string> env_s;
  auto overridden = [&](std::string_view entry) {
    const auto name = entry.substr(0, entry.find('=') + 1);
    if (options.watchdog_pid && name == "WATCHDOG_PID=") return true;
    for (const auto& e : options.env)
      if (e.substr(0, e.find('=') + 1) == name) return true;
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), options.env.begin(), options.env.end());
  char watchdog_pid[40] = "WATCHDOG_PID=";
  std::vector<char*> envp;
  for (auto& s : env_s)
    envp.push_back(s.data());
  if (options.watchdog_pid) envp.push_back(watchdog_pid);
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec. Die with the test binary.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (options.watchdog_pid) {
      // getpid() and the digits by hand: both async-signal-safe.
      char digits[20];
      int n = 0;
      for (long v = getpid(); v > 0 && n < 20; v /= 10)
        digits[n++] = static_cast<char>('0' + v % 10);
      char* p = watchdog_pid + 13;
      while (n > 0)
        *p++ = digits[--n];
      *p = '\0';
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return;
  }
  pid_ = pid;
  out_fd_ = fds[0];
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
  reader_ = std::thread([this] { read_output(); });
}

// Every read of the pipe happens under mu_, and output() first reads whatever is still in
// the pipe: a line the daemon wrote before an event the test has seen (an answer, a file) is
// in output() when the test looks, however the reader thread was scheduled.
void Daemon::read_output() {
  while (true) {
    pollfd p{.fd = out_fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) break;
    std::lock_guard lock(mu_);
    if (!drain_locked()) break;
    cv_.notify_all();
  }
  std::lock_guard lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

bool Daemon::drain_locked() const {
  if (eof_) return false;
  char buf[4096];
  while (true) {
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      output_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    eof_ = true;  // end of file, or an error that ends the output just the same
    return false;
  }
}

bool Daemon::wait_ready(Millis timeout) {
  // A NOTIFY (opcode 4) is answered NOTIMP before the cache, the ACL or the upstream is
  // consulted, so polling with it changes no counter a test looks at.
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    Query q{.name = "ready.invalid", .opcode = 4};
    if (auto a = udp_query(port_, build_query(q), Millis{50})) return true;
    if (!running()) return false;
  }
  return false;
}

Daemon::~Daemon() {
  if (pid_ > 0 && !exit_code_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Daemon::output() const {
  std::lock_guard lock(mu_);
  if (out_fd_ >= 0) drain_locked();
  return output_;
}

std::vector<std::string> Daemon::lines_with(std::string_view needle) const {
  std::vector<std::string> out;
  std::istringstream in(output());
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

bool Daemon::wait_for_output(std::string_view needle, Millis timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    return output_.find(needle) != std::string::npos || eof_;
  }) && output_.find(needle) != std::string::npos;
}

bool Daemon::signal(int sig) const {
  return pid_ > 0 && !exit_code_ && kill(pid_, sig) == 0;
}

bool Daemon::running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return r == 0;
}

std::optional<int> Daemon::wait_exit(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running() && Clock::now() < deadline)
    std::this_thread::sleep_for(Millis{5});
  if (exit_code_) {
    // The process is gone, but the reader thread may not have drained the pipe yet: its last
    // lines (the shutdown summary) would be missing from output(). Wait for end of file.
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, std::max(deadline, Clock::now() + Millis{5000}), [&] { return eof_; });
  }
  return exit_code_;
}

Daemon::Memory Daemon::memory() const {
  Memory m;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  uint64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> key >> value)) continue;
    if (key == "VmRSS:") m.rss_kib = value;
    if (key == "VmHWM:") m.hwm_kib = value;
  }
  return m;
}

// --- small things ---------------------------------------------------------------------------

std::string random_label(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i)
    s.push_back(static_cast<char>('a' + random_u32() % 26));
  return s;
}

TempFile::TempFile(std::string_view contents) {
  char tmpl[] = "/tmp/hg-integ-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) std::abort();
  close(fd);
  path_ = tmpl;
  rewrite(contents);
}

TempFile::~TempFile() {
  std::remove(path_.c_str());
}

void TempFile::rewrite(std::string_view contents) const {
  const std::string tmp = path_ + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
  }
  std::rename(tmp.c_str(), path_.c_str());
}

}  // namespace hg::integration
