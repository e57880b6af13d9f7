#include "tests/rehearse/knot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/ports.h"

#ifndef HOURGLASS_REHEARSE
#error "HOURGLASS_REHEARSE (path of the tool) must be defined by the build"
#endif

namespace hg::rehearse_test {

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

int bound_socket(int type, uint16_t& port) {
  sockaddr_in sin{};
  const int fd = hg::test::bind_any_port(type, sin);
  port = ntohs(sin.sin_port);
  return fd;
}

}  // namespace

SilentPort::SilentPort() {
  fd_ = bound_socket(SOCK_DGRAM, port_);
}
SilentPort::~SilentPort() {
  if (fd_ >= 0) close(fd_);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult run(const std::string& command, int timeout_seconds) {
  return test::run_command(command, timeout_seconds);
}

std::string rehearse_path() {
  return HOURGLASS_REHEARSE;
}

RunResult rehearse(const std::string& args, int timeout_seconds) {
  return run(rehearse_path() + " " + args, timeout_seconds);
}

std::string json_get(const std::string& path, const std::string& expr) {
  const std::string script =
      "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))";
  auto r = run("python3 -c " + test::shell_quote(script) + " " + test::shell_quote(path) + " " +
                   test::shell_quote(expr),
               20);
  if (r.exit_code != 0) return "ERROR: " + r.output;
  while (!r.output.empty() && r.output.back() == '\n')
    r.output.pop_back();
  return r.output;
}

std::unique_ptr<Knot> Knot::start(const std::vector<ZoneText>& zones) {
  std::unique_ptr<Knot> k(new Knot());
  if (k->dir_.path().empty()) {
    ADD_FAILURE() << "mkdtemp failed";
    return nullptr;
  }
  k->port_ = free_port();
  std::string conf = "server:\n    rundir: \"" + k->dir_.path() + "\"\n    listen: 127.0.0.1@" +
                     std::to_string(k->port_) +
                     "\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n"
                     "database:\n    storage: \"" +
                     k->dir_.path() +
                     "/db\"\n"
                     "control:\n    listen: \"" +
                     k->dir_.path() +
                     "/knot.sock\"\n"
                     "log:\n  - target: stderr\n    any: error\n"
                     "template:\n  - id: default\n    storage: \"" +
                     k->dir_.path() +
                     "\"\n    semantic-checks: off\n    zonefile-sync: -1\n"
                     "    journal-content: none\n    zonefile-load: whole\nzone:\n";
  for (const auto& z : zones) {
    conf += "  - domain: " + z.apex + "\n    file: " + z.apex + ".zone\n";
    write_file(k->dir_.file(z.apex + ".zone"), z.text);
  }
  write_file(k->dir_.file("knot.conf"), conf);

  const std::string conf_path = k->dir_.file("knot.conf");
  const std::string log_path = k->dir_.file("knotd.log");
  k->child_ =
      std::make_unique<test::Child>(std::vector<std::string>{"knotd", "-c", conf_path}, log_path);
  for (const auto& z : zones) {
    if (!k->wait_serial(z.apex, 0, 15000)) {
      ADD_FAILURE() << "knotd did not serve " << z.apex << " on port " << k->port_ << ": "
                    << read_file(log_path);
      return nullptr;
    }
  }
  return k;
}

bool Knot::wait_serial(const std::string& apex, uint32_t serial, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{timeout_ms};
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = run("kdig @127.0.0.1 -p " + std::to_string(port_) + " +norec +short +timeout=1 " +
                     "+retry=0 " + apex + " SOA",
                 5);
    // +short SOA: "mname rname serial refresh retry expire minimum"
    std::istringstream in(r.output);
    std::string mname, rname;
    uint64_t got = 0;
    if (r.exit_code == 0 && (in >> mname >> rname >> got) && got >= serial) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return false;
}

bool Knot::replace_zone(const ZoneText& zone, uint32_t serial) {
  write_file(dir_.file(zone.apex + ".zone"), zone.text);
  auto r = run("knotc -s " + dir_.file("knot.sock") + " -b zone-reload " + zone.apex, 20);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "knotc zone-reload: " << r.output;
    return false;
  }
  return wait_serial(zone.apex, serial, 15000);
}

Knot::~Knot() {
  child_.reset();  // stopped by its PID (bounded, then SIGKILL) before its directory goes
}

std::unique_ptr<Unbound> Unbound::start(const std::string& apex, uint16_t auth_port) {
  std::unique_ptr<Unbound> u(new Unbound());
  if (u->dir_.path().empty()) {
    ADD_FAILURE() << "mkdtemp failed";
    return nullptr;
  }
  u->port_ = free_port();
  // "test." is one of Unbound's default local zones (RFC 6761): nodefault lets the stub through.
  const std::string conf =
      "server:\n  interface: 127.0.0.1\n  port: " + std::to_string(u->port_) +
      "\n  do-daemonize: no\n  username: \"\"\n  chroot: \"\"\n  directory: \"" + u->dir_.path() +
      "\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  verbosity: 0\n"
      "  num-threads: 1\n  do-ip6: no\n  do-not-query-localhost: no\n"
      "  access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n  prefetch: no\n"
      "  outgoing-range: 32\n  so-reuseport: no\n  local-zone: \"test.\" nodefault\n"
      "remote-control:\n  control-enable: no\n"
      "stub-zone:\n  name: \"" +
      apex + "\"\n  stub-addr: 127.0.0.1@" + std::to_string(auth_port) + "\n";
  const std::string conf_path = u->dir_.file("unbound.conf");
  write_file(conf_path, conf);
  const std::string log_path = u->dir_.file("unbound.log");
  u->child_ = std::make_unique<test::Child>(
      std::vector<std::string>{"unbound", "-d", "-c", conf_path}, log_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{15};
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = run(
        "kdig @127.0.0.1 -p " + std::to_string(u->port_) + " +timeout=1 +retry=0 " + apex + " SOA",
        5);
    if (r.exit_code == 0 && r.output.find("status: NOERROR") != std::string::npos) return u;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  ADD_FAILURE() << "unbound did not answer for " << apex << " on port " << u->port_ << ": "
                << read_file(log_path);
  return nullptr;
}

Unbound::~Unbound() {
  child_.reset();
}

}  // namespace hg::rehearse_test
