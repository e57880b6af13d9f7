// hourglass-ctl: sends one command to a running hourglassd over its control socket and prints
// the reply (the protocol is described in resolver/ops/control.h).
//
//   hourglass-ctl [--socket PATH] [--timeout SECONDS] [--fleet] COMMAND [ARGS...]
//
// COMMAND is one of hourglassd's control commands (the table in
// resolver/ops/control_commands.h; --help lists them), sent as it stands, or one of two that
// run here: top (tools/ctl/top.h, a live view) and use-as-system-resolver
// (tools/ctl/system_resolver.h).
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

#include "base/cli_doc.h"
#include "resolver/ops/control_commands.h"
#include "tools/ctl/client.h"
#include "tools/ctl/system_resolver.h"
#include "tools/ctl/top.h"

namespace {

// The commands hourglass-ctl runs itself (tools/ctl/top.h, tools/ctl/system_resolver.h).
const std::vector<hg::clidoc::Command>& local_commands() {
  static const std::vector<hg::clidoc::Command> c = {
      {"top", "[--once] [--interval SECONDS] [--names N]",
       "live view: queries/s, hit ratio, misses, stale, SERVFAIL, upstreams, busiest names"},
      {"use-as-system-resolver",
       "[--undo] [--force] [--resolv-conf PATH] [--backup PATH] [--resolvconf-conf PATH] "
       "[--resolvconf PROGRAM] [--nm-conf-dir DIR]",
       "point /etc/resolv.conf at hourglassd (127.0.0.1), keeping its search domains and options, "
       "through openresolv or NetworkManager when they own it; --undo puts everything back"},
  };
  return c;
}

// The commands, for --help, the man page and the completion (hg::clidoc): hourglassd's own
// (resolver/ops/control_commands.h, sent to it as they are), then the two that run here.
const std::vector<hg::clidoc::Command>& commands() {
  static const std::vector<hg::clidoc::Command> c = [] {
    std::vector<hg::clidoc::Command> out;
    out.reserve(std::size(hg::resolver::kControlCommands) + local_commands().size());
    for (const auto& d : hg::resolver::kControlCommands)
      out.push_back({std::string(d.name), std::string(d.args), std::string(d.help)});
    out.insert(out.end(), local_commands().begin(), local_commands().end());
    return out;
  }();
  return c;
}

std::string command_summary() {
  std::string out;
  for (const auto& c : commands()) {
    if (!out.empty()) out += " | ";
    out += c.name;
    if (!c.args.empty()) out += " " + c.args;
  }
  return out;
}

constexpr const char* kManual = R"(# DESCRIPTION
hourglass-ctl sends one command to a running hourglassd(8) over its control socket (hourglassd --control PATH) and prints the reply. The socket is --socket, else $HOURGLASS_CONTROL, else /run/hourglass/control, where the packaged service creates it. The socket is mode 0660: run it as root or as a member of the daemon's group.

top and use-as-system-resolver run in hourglass-ctl itself. top polls stats, upstreams and top-names every --interval seconds and draws a terminal view: queries/s, hit ratio, misses/s, stale answers/s, SERVFAIL/s, each upstream's smoothed RTT and loss (timeouts per query sent), the busiest names and the names that cause the most upstream queries. With --once it waits one interval, prints one plain snapshot and exits; its totals line holds the same counters as stats at the time of its second sample.

use-as-system-resolver makes 127.0.0.1 the machine's resolver and keeps the search, domain, options and sortlist lines of /etc/resolv.conf. A plain file (or a link no manager owns) is renamed to /etc/hourglass/resolv.conf.before and replaced. A file written by openresolv is changed through it: name_servers=127.0.0.1 in /etc/resolvconf.conf, then resolvconf -u. A file written by NetworkManager gets a drop-in in /etc/NetworkManager/conf.d (rc-manager=resolvconf with openresolv, dns=none without it). It prints every change. It refuses when hourglassd does not answer on its control socket (--force switches anyway). --undo puts back exactly what was there, leaving alone whatever something else changed since. Removing the package runs --undo. --resolv-conf, --backup, --resolvconf-conf, --resolvconf and --nm-conf-dir change the paths (for tests). See docs/network-managers.md.

# LINKS
link and links give hourglassd the DNS servers and domains of a network link while it runs, as resolvectl dns/domain IFACE does for systemd-resolved; the scripts of a network manager or VPN client (resolvconf, NetworkManager, OpenVPN, wg-quick) call them when a link comes up or goes down.

  hourglass-ctl link IFACE [--dns ADDR]... [--domain ZONE]... [--default-route yes|no]
  hourglass-ctl link IFACE --revert
  hourglass-ctl links

IFACE is 1 to 64 characters of A-Z a-z 0-9 . _ : @ + - (tun0, wlan0.dhcp, tun0.openvpn). ADDR is a numeric address with an optional port, as --upstream takes it: 10.8.0.1, 10.8.0.1:5353, 2001:db8::1, [2001:db8::1]:5353. ZONE is a domain name whose names go to the link's servers; ~ZONE routes only, ZONE without ~ is also a search domain; . or ~. makes the link a default route. --default-route is yes unless the link has a ~ZONE: a default-route link's servers are added to the default upstreams, after the configured ones. At most 64 links, 16 --dns and 64 --domain per link.

link IFACE replaces everything IFACE had, so sending the same command again changes nothing; a link without --dns and --domain is reverted. A zone configured with --forward wins over a link's same zone; of two links with the same zone, the one set last wins. Links last until reverted or hourglassd stops: SIGHUP and upstream-file changes keep them, a restart does not (the network manager's scripts set them again). links prints one line per link, sorted by IFACE, and nothing when there is none:

  tun0.openvpn dns=10.8.0.1:53 domains=~corp.example default-route=no

# EXIT STATUS
0 with the reply on standard output; 1 when hourglassd answered with an error, or use-as-system-resolver could not do what was asked; 2 when hourglassd could not be reached or its reply did not arrive in time.

# ENVIRONMENT
  HOURGLASS_CONTROL    the control socket when --socket is not given

# EXAMPLES
  hourglass-ctl stats
  hourglass-ctl dump www.example.com
  hourglass-ctl flush-zone example.com
  hourglass-ctl ttl-cap shop.example.com 60
  hourglass-ctl top
  hourglass-ctl link tun0 --dns 10.8.0.1 --domain ~corp.example
  hourglass-ctl link tun0 --revert
  hourglass-ctl use-as-system-resolver

# SEE ALSO
hourglassd(8), hourglass.toml(5), hourglass-rehearse(1)
)";

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
  std::string fleet_commands;  // the commands of the table that take --fleet
  for (const auto& d : hg::resolver::kControlCommands)
    if (d.fleet) fleet_commands += (fleet_commands.empty() ? "" : ", ") + std::string(d.name);
  app.add_flag(
      "--fleet", fleet,
      fleet_commands + ": also in Redis and on every instance of the fleet (hourglassd --redis)");
  app.add_option("-s,--socket", path, "hourglassd's control socket ($HOURGLASS_CONTROL)")
      ->type_name("PATH")
      ->capture_default_str();
  app.add_option("-t,--timeout", timeout_s,
                 "Seconds to wait for hourglassd to send (more of) its reply")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("command", words, command_summary());
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
  if (hg::clidoc::requested()) {
    hg::clidoc::Extra extra;
    extra.section = 8;
    extra.synopsis = "[OPTIONS] COMMAND [ARGS...]";
    extra.commands = commands();
    extra.manual = kManual;
    std::fputs(hg::clidoc::to_json(app, extra).c_str(), stdout);
    return 0;
  }
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
  if (words[0] == "top") return hg::ctl::run_top(path, timeout_s, words);
  if (words[0] == "use-as-system-resolver") {
    return hg::ctl::use_as_system_resolver(path, timeout_s, words);
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
