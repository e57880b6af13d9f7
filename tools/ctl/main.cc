// hourglass-ctl: sends one command to a running hourglassd over its control socket and prints
// the reply (the protocol is described in resolver/control.h).
//
//   hourglass-ctl [--socket PATH] [--timeout SECONDS] COMMAND [ARGS...]
//   hourglass-ctl stats | upstreams | route NAME | dump [NAME] | flush [NAME] | flush-zone ZONE
//   hourglass-ctl ttl-cap ZONE SECONDS | ttl-cap-clear ZONE | ttl-caps | save | help
//   hourglass-ctl shadow [list | set ZONE SECONDS | clear ZONE]
//   hourglass-ctl drain NAME [--old RDATA]... [--flush-old]
//   (--fleet with flush, flush-zone, ttl-cap, ttl-cap-clear: every instance and Redis too)
//
// The socket is --socket, else $HOURGLASS_CONTROL, else /run/hourglass/control; hourglassd
// only creates one when started with --control PATH.
//
// Exit status: 0 with the reply on stdout; 1 when hourglassd answered "error: ..." (printed on
// stderr); 2 when it could not be reached or the reply did not arrive in time (or on any
// other local failure).
#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kDefaultSocket = "/run/hourglass/control";
constexpr std::size_t kMaxLine = 4096;  // the daemon's limit, '\n' included

std::string connect_hint(int err, const std::string& path) {
  switch (err) {
    case ENOENT:
      return fmt::format(
          "is hourglassd running with --control {}? (--socket or "
          "$HOURGLASS_CONTROL picks another path)",
          path);
    case ECONNREFUSED:
      return fmt::format(
          "nothing listens on it: hourglassd has stopped, or was started "
          "without --control {}",
          path);
    case EACCES:
      return "the socket is mode 0660: run as hourglassd's user or a member of its group";
    default:
      return fmt::format("is hourglassd running with --control {}?", path);
  }
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

int run(int argc, char** argv) {
  CLI::App app{"hourglass-ctl: control a running hourglassd (see hourglassd --control)",
               "hourglass-ctl"};
  const char* env = std::getenv("HOURGLASS_CONTROL");
  std::string path = env != nullptr && *env != '\0' ? env : kDefaultSocket;
  double timeout_s = 10;
  std::vector<std::string> words;
  bool fleet = false;
  app.add_flag("--fleet", fleet,
               "flush, flush-zone, ttl-cap, ttl-cap-clear: also in Redis and on every instance "
               "of the fleet (hourglassd --redis)");
  app.add_option("-s,--socket", path, "hourglassd's control socket ($HOURGLASS_CONTROL)")
      ->capture_default_str();
  app.add_option("-t,--timeout", timeout_s,
                 "Seconds to wait for hourglassd to send (more of) its reply")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option(
      "command", words,
      "stats | upstreams | dump [NAME] | flush [NAME] | flush-zone ZONE | ttl-cap ZONE SECONDS "
      "| ttl-cap-clear ZONE | ttl-caps | save | route NAME | shadow [list | set ZONE SECONDS | "
      "clear "
      "ZONE] | drain NAME [--old RDATA]... [--flush-old] | help");
  // Everything from the first word that is not one of our own options is the command, passed
  // on verbatim (drain's --old and --flush-old belong to it, not to hourglass-ctl; a --fleet
  // after the command is passed on as it stands, one before it is appended below).
  int ours = 1;
  while (ours < argc) {
    const std::string_view a = argv[ours];
    if (a == "-s" || a == "--socket" || a == "-t" || a == "--timeout") {
      ours += 2;
    } else if (a.starts_with("--socket=") || a.starts_with("--timeout=") || a == "-h" ||
               a == "--help" || a == "--fleet" ||
               (a.size() > 2 && (a.starts_with("-s") || a.starts_with("-t")))) {
      ours += 1;
    } else {
      break;
    }
  }
  const std::vector<std::string> command(argv + std::min(ours, argc), argv + argc);
  app.footer("Exit status: 0 ok, 1 hourglassd answered with an error, 2 hourglassd not reachable.");
  try {
    app.parse(std::min(argc, ours), argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  words = command;
  if (words.empty()) {
    fmt::print(stderr, "hourglass-ctl: command is required; run with --help for the list\n");
    return 2;
  }

  std::string line;
  for (const auto& w : words) {
    if (w.find_first_of("\n\r") != std::string::npos) {
      fmt::print(stderr, "hourglass-ctl: arguments must not contain line breaks\n");
      return 2;
    }
    line += (line.empty() ? "" : " ") + w;
  }
  if (fleet) line += " --fleet";
  if (line.size() + 1 > kMaxLine) {
    fmt::print(stderr, "hourglass-ctl: command longer than {} bytes\n", kMaxLine - 1);
    return 2;
  }
  line += '\n';

  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sun.sun_path) {
    fmt::print(stderr, "hourglass-ctl: --socket {}: expected a path of 1 to {} bytes\n", path,
               sizeof sun.sun_path - 1);
    return 2;
  }
  std::memcpy(sun.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&sun), sizeof sun) != 0) {
    const int err = errno;
    fmt::print(stderr, "hourglass-ctl: cannot connect to {}: {}; {}\n", path, std::strerror(err),
               connect_hint(err, path));
    return 2;
  }
  if (!send_all(fd, line)) {
    fmt::print(stderr, "hourglass-ctl: cannot send to {}: {}\n", path, std::strerror(errno));
    ::close(fd);
    return 2;
  }

  // The reply is lines ending in '\n', closed by an empty line. Print each line as it comes,
  // so a long dump streams.
  using Clock = std::chrono::steady_clock;
  const auto patience =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto deadline = Clock::now() + patience;  // renewed by every part of the reply
  std::string buf;
  bool first_line = true;
  bool failed = false;
  char chunk[65536];
  for (;;) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string_view l(buf.data() + start, nl - start);
      if (l.empty()) {
        ::close(fd);
        return failed ? 1 : 0;
      }
      if (first_line && l.starts_with("error:")) failed = true;
      first_line = false;
      std::fwrite(l.data(), 1, l.size(), failed ? stderr : stdout);
      std::fputc('\n', failed ? stderr : stdout);
    }
    buf.erase(0, start);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::fflush(stdout);
      fmt::print(stderr, "hourglass-ctl: {} sent nothing for {}s; the reply is incomplete\n", path,
                 timeout_s);
      ::close(fd);
      return 2;
    }
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fflush(stdout);
      fmt::print(stderr, "hourglass-ctl: {} closed the connection before the reply ended\n", path);
      ::close(fd);
      return 2;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    deadline = Clock::now() + patience;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever is thrown past run() (std::bad_alloc, a CLI11 or fmt error, a bug) is reported
  // with its message and a failure status, rather than ending in std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglass-ctl: %s\n", e.what());
    return 2;
  }
}
