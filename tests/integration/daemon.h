// Daemon: the integration tests' handle on a real hourglassd process, and the client side
// that talks to it — queries built and answers parsed with wire/, over UDP and TCP from code,
// and `dig` run through popen.
//
// The process is started with fork+exec (PR_SET_PDEATHSIG, so a test binary killed by the
// ctest timeout takes its daemons with it); stdout and stderr go to one pipe that a thread
// collects into lines. start() waits for the "listening on ADDR:PORT" line, then polls the
// port with a NOTIFY query (answered NOTIMP: no cache, no upstream involved) until it
// answers, so no test sleeps to wait for readiness. The destructor SIGKILLs the daemon by its
// PID if it is still running. Every wait here has a bound.
//
// Only loopback is used: the daemon listens on 127.0.0.1:0 (the kernel picks the port), and
// clients send from 127.0.0.1 unless a test binds another 127/8 address.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "wire/header.h"
#include "wire/owned.h"
#include "wire/types.h"

namespace hg::integration {

using Bytes = std::vector<uint8_t>;
using Millis = std::chrono::milliseconds;

/// A query to build from code. Defaults: a random ID, RD=1, class IN, EDNS0 with a 1232-byte
/// payload and no DO bit.
struct Query {
  std::string name{};
  uint16_t type = 1;  ///< A
  uint16_t klass = 1;
  std::optional<uint16_t> id{};  ///< random when unset
  uint16_t flags = wire::flag::RD;
  uint8_t opcode = 0;
  bool edns = true;
  uint16_t udp_size = 1232;
  bool dnssec_ok = false;
  uint8_t edns_version = 0;
};

/// The query's wire form (the name keeps the letter case it was given).
Bytes build_query(const Query& q);

/// One answer: the bytes as received and the parsed message.
struct Answer {
  Bytes bytes;
  wire::OwnedMessage msg;

  uint16_t id() const noexcept { return msg.header.id; }
  wire::RCode rcode() const noexcept { return msg.rcode(); }
  bool tc() const noexcept { return msg.header.tc(); }
  bool ad() const noexcept { return msg.header.ad(); }
  /// The first Extended DNS Error info-code (RFC 8914), if the answer has one.
  std::optional<uint16_t> ede() const;
  /// TTLs of the records of one section, in order.
  std::vector<uint32_t> ttls(wire::Section s = wire::Section::Answer) const;
  /// The question section's bytes (qname as sent, qtype, qclass) of a message.
  static std::optional<Bytes> question_bytes(const Bytes& message);
  /// dig-style text, for failure messages.
  std::string text() const;
};

/// Parses an answer; nullopt when the bytes are not a DNS message wire/ accepts.
std::optional<Answer> parse_answer(Bytes bytes);

/// Sends `query` over UDP from `from` (an address in 127.0.0.0/8) to 127.0.0.1:port and waits
/// up to `timeout` for a reply with the same ID. nullopt on timeout or an unparseable reply.
std::optional<Answer> udp_query(uint16_t port, const Bytes& query, Millis timeout = Millis{4000},
                                const char* from = "127.0.0.1");
/// The same over a fresh TCP connection (2-byte length prefix, RFC 1035 §4.2.2).
std::optional<Answer> tcp_query(uint16_t port, const Bytes& query, Millis timeout = Millis{4000});

/// A UDP client socket bound to 127.0.0.1 (kernel port), closed on destruction; for tests that
/// keep many queries outstanding at once.
class UdpClient {
 public:
  explicit UdpClient(const char* from = "127.0.0.1");
  ~UdpClient();
  UdpClient(const UdpClient&) = delete;
  UdpClient& operator=(const UdpClient&) = delete;
  int fd() const noexcept { return fd_; }
  bool send(uint16_t port, const Bytes& query);
  /// Waits up to `timeout` for one datagram.
  std::optional<Bytes> receive(Millis timeout);

 private:
  int fd_ = -1;
};

/// The A records of an answer's answer section, as dotted quads.
std::vector<std::string> a_records(const Answer& a);

/// An answer collected by ask_all(), and the milliseconds from its query's send to its arrival.
struct TimedAnswer {
  Answer answer;
  double ms = 0;
};

/// Sends every name of `names` (type A) over UDP, `window` queries at a time from a fresh
/// client socket per window (query IDs: the name's index + 1), and collects the answers, each
/// window waiting at most `wait`. Returns name -> answer; a name without an answer is absent.
std::map<std::string, TimedAnswer> ask_all(uint16_t port, const std::vector<std::string>& names,
                                           std::size_t window, Millis wait);

/// Output and exit status of one `dig` run.
struct DigResult {
  std::string output;
  int exit_code = -1;

  /// "NOERROR", "SERVFAIL", ... from the ->>HEADER<<- line; "" if absent.
  std::string status() const;
  /// The flags from the ";; flags:" line, e.g. "qr rd ra".
  std::string flags() const;
  /// The TTL column of every record in the ANSWER SECTION (or AUTHORITY SECTION).
  std::vector<uint32_t> ttls(std::string_view section = "ANSWER") const;
  bool contains(std::string_view s) const { return output.find(s) != std::string::npos; }
};

/// Runs `dig @127.0.0.1 -p PORT +time=SECONDS +tries=1 ARGS` (ARGS are passed to the shell
/// as given; keep them to names and +options). Wrapped in `timeout` as a second bound.
DigResult dig(uint16_t port, const std::string& args, int time_seconds = 4);

/// How Daemon::start_with() starts hourglassd.
struct StartOptions {
  bool add_listen = true;  ///< add `--listen 127.0.0.1:0` when args have no --listen
  /// Add `--dnssec off` when args have no --dnssec: the upstreams tests set up deliver no
  /// DNSSEC records, and the probe of validation's default mode would be one more query to
  /// them. The tests of DNSSEC (and of the default) give --dnssec or set this false.
  bool dnssec_off = true;
  /// Add `--no-special-zone test`: most tests name their FakeUpstream's data below test.
  /// (RFC 6761 §6.2's name for testing), which hourglassd otherwise answers NXDOMAIN itself.
  /// The tests of the special-use names set this false.
  bool test_zone_upstream = true;
  /// Add `--allow-root` when args have no --user or --allow-root: the tests run as root, and
  /// hourglassd refuses to stay root without being told (resolver/ops/privileges.h). The tests
  /// of that refusal and of --user (privilege_test.cc) set this false or give --user.
  bool allow_root = true;
  /// "NAME=VALUE" strings added to (or replacing in) the inherited environment.
  std::vector<std::string> env{};
  /// Also set WATCHDOG_PID to the daemon's own PID (as systemd does with WatchdogSec=).
  bool watchdog_pid = false;
  /// Wait until it answers (start()'s behaviour). When false, start_with() returns right
  /// after fork+exec: call wait_listening() to learn the port.
  bool wait_ready = true;
};

/// A running hourglassd.
class Daemon {
 public:
  /// Starts hourglassd with `args`, adding `--listen 127.0.0.1:0` when args have no --listen,
  /// and waits (bounded) until it answers. Check ready() afterwards: false when the daemon
  /// exited or never listened; output() says why.
  static std::unique_ptr<Daemon> start(std::vector<std::string> args, bool add_listen = true);
  static std::unique_ptr<Daemon> start_with(std::vector<std::string> args,
                                            const StartOptions& options);
  /// Waits (bounded) for the "listening on" line and reads the ports from it; false if it
  /// never came.
  bool wait_listening(Millis timeout);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  bool ready() const noexcept { return ready_; }
  pid_t pid() const noexcept { return pid_; }
  /// The first listen port (from the "listening on" line).
  uint16_t port() const noexcept { return port_; }
  /// Every listen address from that line, e.g. "127.0.0.1:5353".
  const std::vector<std::string>& listen_addresses() const noexcept { return listen_; }

  /// Everything the daemon wrote to stdout and stderr so far.
  std::string output() const;
  /// Lines of output containing `needle`.
  std::vector<std::string> lines_with(std::string_view needle) const;
  /// Waits until the output contains `needle` (bounded); true if it did.
  bool wait_for_output(std::string_view needle, Millis timeout);

  bool signal(int sig) const;
  /// Waits up to `timeout` for the process to exit: its exit code, or 128 + signal number.
  /// Once it has exited, also waits (up to 5 s more) until its output is read to the end.
  std::optional<int> wait_exit(Millis timeout);
  bool running();

  /// VmRSS and VmHWM from /proc/PID/status, in KiB (0 when unreadable).
  struct Memory {
    uint64_t rss_kib = 0;
    uint64_t hwm_kib = 0;
  };
  Memory memory() const;

 private:
  Daemon() = default;
  void spawn(const std::vector<std::string>& args, const StartOptions& options = {});
  void read_output();
  bool wait_ready(Millis timeout);

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  int out_fd_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  mutable std::string output_;  // guarded by mu_
  mutable bool eof_ = false;    // guarded by mu_
  /// Appends what the pipe holds now; false at end of file. Called with mu_ held.
  bool drain_locked() const;
  bool ready_ = false;
  uint16_t port_ = 0;
  std::vector<std::string> listen_;
};

/// A random lowercase label of `n` letters, for names no other test (or run) has cached.
std::string random_label(std::size_t n = 10);

/// A temporary file, removed on destruction.
class TempFile {
 public:
  explicit TempFile(std::string_view contents);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const noexcept { return path_; }
  /// Replaces the contents atomically (write a sibling, rename over).
  void rewrite(std::string_view contents) const;

 private:
  std::string path_;
};

}  // namespace hg::integration
