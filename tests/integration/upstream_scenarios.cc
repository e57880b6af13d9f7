// hg_upstream_scenarios: measures the upstream robustness scenarios of docs/upstream.md
// against hourglassd and, when it is installed, Unbound in forward mode, on loopback.
//
//   build/tests/integration/hg_upstream_scenarios [hourglass|unbound|both]
//   build/tests/integration/hg_upstream_scenarios ports [hourglass|unbound|dnsmasq|all]
//
// `ports` runs the source-port and retransmission scenarios (a name that hangs while others
// are asked, slow names, names never answered) against hourglassd, Unbound and dnsmasq, and
// prints the distinct source ports and the upstream queries per name the fake recorded.
//
// Each scenario starts FakeUpstreams that misbehave (EDNS FORMERR, 50 % seeded loss, dead
// server, case scrambling, forged wrong-case replies), starts the resolver forwarding to them
// (hourglassd with --upstream; unbound from a config written to a temp dir, started with
// do-daemonize: no and stopped by its PID), sends the scenario's queries and prints one line:
// names answered with data, and latency percentiles. Every loop is bounded in count and time.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon.h"
#include "tests/support/child.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::free_port;
using Clock = std::chrono::steady_clock;

// A resolver under test: started for one scenario, stopped by its PID afterwards.
class Resolver {
 public:
  virtual ~Resolver() = default;
  virtual uint16_t port() const = 0;
  virtual bool ready() const = 0;
};

class Hourglass : public Resolver {
 public:
  explicit Hourglass(const std::vector<const FakeUpstream*>& ups) {
    std::vector<std::string> args{"--control", dir_.file("control")};
    for (const auto* u : ups) {
      args.push_back("--upstream");
      args.push_back(u->address());
    }
    d_ = Daemon::start(args);
  }
  ~Hourglass() override {
    // What hourglass-ctl upstreams says at the end of the scenario.
    const std::string cmd = "timeout 20 " HOURGLASS_CTL " --socket '" + dir_.file("control") +
                            "' upstreams | sed 's/^/    /'";
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) std::printf("    (hourglass-ctl failed)\n");
    d_.reset();
  }
  uint16_t port() const override { return d_->port(); }
  bool ready() const override { return d_->ready(); }

 private:
  test::TempDir dir_{"hg-scen"};
  std::unique_ptr<Daemon> d_;
};

class Unbound : public Resolver {
 public:
  Unbound(const std::vector<const FakeUpstream*>& ups, bool caps) {
    port_ = free_port();
    std::ofstream conf(dir_.file("unbound.conf"));
    conf << "server:\n  interface: 127.0.0.1\n  port: " << port_
         << "\n  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  username: \"\"\n"
            "  chroot: \"\"\n  directory: \""
         << dir_.path()
         << "\"\n  pidfile: \"\"\n  num-threads: 1\n  verbosity: 0\n"
            "  do-not-query-localhost: no\n  access-control: 127.0.0.0/8 allow\n"
            "  module-config: \"iterator\"\n  local-zone: \"test.\" nodefault\n"
            "  harden-referral-path: no\n  prefetch: no\n  do-ip6: no\n"
            "  use-caps-for-id: "
         << (caps ? "yes" : "no") << "\nforward-zone:\n  name: \".\"\n";
    for (const auto* u : ups)
      conf << "  forward-addr: 127.0.0.1@" << u->port() << "\n";
    conf.close();
    child_ = std::make_unique<test::Child>(
        std::vector<std::string>{"unbound", "-d", "-c", dir_.file("unbound.conf")},
        dir_.file("unbound.log"));
    // Ready when it answers version.server CH TXT (from itself, no upstream involved).
    for (int i = 0; i < 100 && !ready_; ++i) {
      auto a = udp_query(port_, build_query({.name = "version.server", .type = 16, .klass = 3}),
                         Millis{100});
      ready_ = a.has_value();
    }
  }
  ~Unbound() override {
    child_.reset();  // stopped by its PID (bounded, then SIGKILL) before its directory goes
  }
  uint16_t port() const override { return port_; }
  bool ready() const override { return ready_; }

 private:
  test::TempDir dir_{"hg-unbound"};
  uint16_t port_ = 0;
  std::unique_ptr<test::Child> child_;
  bool ready_ = false;
};

// dnsmasq forwarding to the fakes, all defaults but what keeps it on loopback, in the
// foreground, without a cache file or /etc/resolv.conf; stopped by its PID.
class Dnsmasq : public Resolver {
 public:
  explicit Dnsmasq(const std::vector<const FakeUpstream*>& ups) {
    port_ = free_port();
    std::vector<std::string> args{"dnsmasq",
                                  "-k",
                                  "-C",
                                  "/dev/null",
                                  "--no-resolv",
                                  "--no-hosts",
                                  "--bind-interfaces",
                                  "--listen-address=127.0.0.1",
                                  "--port=" + std::to_string(port_),
                                  "--user=root",
                                  "--pid-file="};
    for (const auto* u : ups)
      args.push_back("--server=127.0.0.1#" + std::to_string(u->port()));
    child_ = std::make_unique<test::Child>(args, log_);
    for (int i = 0; i < 100 && !ready_; ++i) {
      auto a = udp_query(port_, build_query({.name = "version.bind", .type = 16, .klass = 3}),
                         Millis{100});
      ready_ = a.has_value();
    }
  }
  ~Dnsmasq() override {
    child_.reset();
    std::remove(log_.c_str());
  }
  uint16_t port() const override { return port_; }
  bool ready() const override { return ready_; }

 private:
  uint16_t port_ = 0;
  std::string log_ = "/tmp/hg-dnsmasq-" + std::to_string(::getpid()) + "-" +
                     std::to_string(reinterpret_cast<uintptr_t>(this)) + ".log";
  std::unique_ptr<test::Child> child_;
  bool ready_ = false;
};

struct Result {
  int asked = 0, answered = 0, wrong = 0;
  std::vector<double> ms;  // latency of each answered query
};

// `names` sent `batch` at a time, each once, answers awaited 3.2 s; an answer counts when it
// is NOERROR with `expect` as its A record (`wrong` when it has another A record).
Result run(uint16_t port, const std::vector<std::string>& names, int batch,
           const std::string& expect) {
  Result r;
  r.asked = static_cast<int>(names.size());
  for (const auto& [name, got] :
       ask_all(port, names, static_cast<std::size_t>(batch), Millis{3200})) {
    const auto recs = a_records(got.answer);
    if (got.answer.rcode() == wire::RCode::NoError && recs == std::vector<std::string>{expect}) {
      ++r.answered;
      r.ms.push_back(got.ms);
    } else if (!recs.empty()) {
      ++r.wrong;
    }
  }
  return r;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::vector<std::string> names(const std::string& zone, int n) {
  std::vector<std::string> out;
  const auto salt = std::to_string(Clock::now().time_since_epoch().count() % 1000000);
  for (int i = 0; i < n; ++i)
    out.push_back("n" + std::to_string(i) + "-" + salt + "." + zone);
  return out;
}

using Factory = std::function<std::unique_ptr<Resolver>(const std::vector<const FakeUpstream*>&)>;

void report(const char* who, const char* scenario, const Result& r) {
  std::printf("%-9s %-28s answered %3d/%3d  wrong %2d  p50 %7.1f ms  p95 %7.1f ms  max %7.1f ms\n",
              who, scenario, r.answered, r.asked, r.wrong, pct(r.ms, 0.5), pct(r.ms, 0.95),
              pct(r.ms, 1.0));
  std::fflush(stdout);
}

void scenarios(const char* who, const Factory& make) {
  const auto a = FakeRecord::a("", 300, "192.0.2.1");
  {
    FakeUpstream old_server, healthy;
    old_server.set_default(FakeReply::records({a}));
    old_server.set_formerr_to_edns(true);
    healthy.set_default(FakeReply::records({a}));
    auto r = make({&old_server, &healthy});
    if (!r->ready()) return (void)std::printf("%s: did not start\n", who);
    report(who, "formerr-to-edns first server",
           run(r->port(), names("edns.test", 50), 1, "192.0.2.1"));
  }
  {
    FakeUpstream lossy;
    lossy.set_default(FakeReply::records({a}));
    lossy.set_loss(0.5, 20261130);
    auto r = make({&lossy});
    report(who, "50% loss, 200 names x20",
           run(r->port(), names("loss.test", 200), 20, "192.0.2.1"));
  }
  {
    FakeUpstream dead, live;
    dead.set_default(FakeReply::dropped());
    live.set_default(FakeReply::records({a}));
    auto r = make({&dead, &live});
    report(who, "dead first + live (30, seq)",
           run(r->port(), names("dead.test", 30), 1, "192.0.2.1"));
  }
  {
    FakeUpstream scrambler;
    scrambler.set_default(FakeReply::records({a}));
    scrambler.set_scramble_case(true);
    auto r = make({&scrambler});
    report(who, "case-scrambling server (20)",
           run(r->port(), names("case.test", 20), 1, "192.0.2.1"));
  }
  {
    FakeUpstream forger;
    forger.set_default(FakeReply::records({a}));
    forger.set_forge_wrong_case(FakeRecord::a("", 300, "203.0.113.66"));
    auto r = make({&forger});
    report(who, "forged wrong-case reply (20)",
           run(r->port(), names("forged.test", 20), 1, "192.0.2.1"));
  }
}

// --- source ports and retransmissions ------------------------------------------------------

std::set<std::string> name_set(const std::vector<std::string>& v) {
  std::set<std::string> out;
  for (const auto& n : v) {
    std::string l;
    for (char c : n)
      l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.insert(l);
  }
  return out;
}

// UDP queries the fake got for `names`, and how many distinct source ports they came from.
std::pair<std::size_t, std::size_t> ports_of(const FakeUpstream& up,
                                             const std::vector<std::string>& names) {
  const auto set = name_set(names);
  std::set<uint16_t> ports;
  std::size_t n = 0;
  for (const auto& q : up.received()) {
    if (q.transport != test::Transport::Udp || set.count(q.qname) == 0) continue;
    ++n;
    ports.insert(q.source_port);
  }
  return {n, ports.size()};
}

// Sends each of `names` once from `client` (answers are never read) and waits, bounded,
// until the fake has seen them all.
void hang(FakeUpstream& up, UdpClient& client, uint16_t port,
          const std::vector<std::string>& names) {
  for (const auto& n : names)
    up.on(n, FakeReply::dropped());
  for (const auto& n : names)
    client.send(port, build_query({.name = n}));
  const auto set = name_set(names);
  for (int i = 0; i < 200; ++i) {
    std::set<std::string> seen;
    for (const auto& q : up.received())
      if (set.count(q.qname) != 0) seen.insert(q.qname);
    if (seen.size() == set.size()) return;
    std::this_thread::sleep_for(Millis{10});
  }
}

void ports_scenarios(const char* who, const Factory& make) {
  const auto a = FakeRecord::a("", 300, "192.0.2.1");
  const auto fresh = [](const std::string& zone, int n) { return names(zone, n); };
  {
    FakeUpstream up;
    up.set_default(FakeReply::records({a}));
    auto r = make({&up});
    if (!r->ready()) return (void)std::printf("%s: did not start\n", who);
    UdpClient hanging;
    hang(up, hanging, r->port(), fresh("hang1.test", 1));
    const auto asked = fresh("seq.test", 16);
    const Result res = run(r->port(), asked, 1, "192.0.2.1");
    const auto [n, distinct] = ports_of(up, asked);
    std::printf(
        "%-9s 16 names one by one, 1 hangs    answered %3d/%3d  %zu distinct ports for %zu "
        "queries\n",
        who, res.answered, res.asked, distinct, n);
  }
  {
    FakeUpstream up;
    up.set_default(FakeReply::records({a}));
    auto r = make({&up});
    UdpClient hanging;
    hang(up, hanging, r->port(), fresh("hang5.test", 5));
    const auto asked = fresh("many.test", 600);
    const auto t0 = Clock::now();
    const Result res = run(r->port(), asked, 30, "192.0.2.1");
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const auto [n, distinct] = ports_of(up, asked);
    std::printf(
        "%-9s 600 names x30 (%5.0f q/s), 5 hang answered %3d/%3d  %zu distinct ports for %zu "
        "queries\n",
        who, 600 / secs, res.answered, res.asked, distinct, n);
  }
  {
    FakeUpstream up;
    up.set_default(FakeReply::records({a}));
    auto r = make({&up});
    run(r->port(), fresh("warm.test", 20), 1, "192.0.2.1");
    FakeReply slow = FakeReply::records({a});
    slow.delay = Millis{300};
    const std::string name = fresh("slow.test", 1)[0];
    up.on(name, slow);
    std::vector<std::unique_ptr<UdpClient>> clients;
    for (int i = 0; i < 100; ++i) {
      clients.push_back(std::make_unique<UdpClient>());
      clients.back()->send(r->port(),
                           build_query({.name = name, .id = static_cast<uint16_t>(i + 1)}));
    }
    int answered = 0;
    for (auto& c : clients) {
      auto bytes = c->receive(Millis{3200});
      if (!bytes) continue;
      auto ans = parse_answer(*bytes);
      if (ans && a_records(*ans) == std::vector<std::string>{"192.0.2.1"}) ++answered;
    }
    std::printf("%-9s 300 ms name x 100 clients      answered %3d/100  %zu upstream queries\n", who,
                answered, up.queries(name));
  }
  {
    FakeUpstream up;
    up.set_default(FakeReply::records({a}));
    auto r = make({&up});
    run(r->port(), fresh("warm.test", 30), 1, "192.0.2.1");
    const auto asked = fresh("mixed.test", 90);
    for (std::size_t i = 0; i < asked.size(); i += 3) {
      FakeReply slow = FakeReply::records({a});
      slow.delay = Millis{400};
      up.on(asked[i], slow);
    }
    const Result res = run(r->port(), asked, 10, "192.0.2.1");
    const auto [n, distinct] = ports_of(up, asked);
    std::printf(
        "%-9s every 3rd of 90 names 400 ms   answered %3d/%3d  %.2f upstream queries/name\n", who,
        res.answered, res.asked, static_cast<double>(n) / 90.0);
    (void)distinct;
  }
  {
    FakeUpstream up;
    up.set_default(FakeReply::records({a}));
    auto r = make({&up});
    run(r->port(), fresh("warm.test", 10), 1, "192.0.2.1");
    const auto never = fresh("never.test", 10);
    UdpClient hanging;
    for (const auto& n : never)
      up.on(n, FakeReply::dropped());
    for (std::size_t i = 0; i < never.size(); ++i)
      hanging.send(r->port(), build_query({.name = never[i], .id = static_cast<uint16_t>(i + 1)}));
    const Result others = run(r->port(), fresh("ok.test", 100), 20, "192.0.2.1");
    int replies = 0;
    const auto deadline = Clock::now() + Millis{4000};
    while (replies < 10 && Clock::now() < deadline) {
      auto bytes = hanging.receive(Millis{100});
      if (bytes) ++replies;
    }
    std::size_t most = 0, total = 0;
    for (const auto& n : never) {
      most = std::max(most, up.queries(n));
      total += up.queries(n);
    }
    std::printf(
        "%-9s 10 never answered, 100 others  others %3d/100  sends per hanging name: %.1f avg, %zu "
        "max (replies %d/10)\n",
        who, others.answered, static_cast<double>(total) / 10.0, most, replies);
  }
}

}  // namespace
}  // namespace hg::integration

int main(int argc, char** argv) {
  using namespace hg::integration;
  if (argc > 1 && std::string(argv[1]) == "ports") {
    const std::string who = argc > 2 ? argv[2] : "all";
    if (who == "hourglass" || who == "all")
      ports_scenarios("hourglass",
                      [](const auto& ups) { return std::make_unique<Hourglass>(ups); });
    if (who == "unbound" || who == "all")
      ports_scenarios("unbound",
                      [](const auto& ups) { return std::make_unique<Unbound>(ups, true); });
    if (who == "dnsmasq" || who == "all")
      ports_scenarios("dnsmasq", [](const auto& ups) { return std::make_unique<Dnsmasq>(ups); });
    return 0;
  }
  const std::string which = argc > 1 ? argv[1] : "both";
  if (which == "hourglass" || which == "both")
    scenarios("hourglass", [](const auto& ups) { return std::make_unique<Hourglass>(ups); });
  if (which == "unbound" || which == "both") {
    scenarios("unbound", [](const auto& ups) { return std::make_unique<Unbound>(ups, true); });
  }
  return 0;
}
