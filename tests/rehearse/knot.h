// Test helpers for hourglass-rehearse's plan and watch: a real knotd as the authoritative
// server on loopback, and running the hourglass-rehearse binary.
//
// Knot writes knot.conf and the zone files into a fresh temporary directory, starts knotd
// (fork+exec, PR_SET_PDEATHSIG) on 127.0.0.1 with a port the kernel picked, waits (bounded)
// until kdig gets an authoritative SOA for every zone, and stops it by its PID. replace_zone()
// rewrites a zone file and reloads it with `knotc -b zone-reload`, then waits until the new
// SOA serial is served.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child.h"
#include "tests/support/command.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"

namespace hg::rehearse_test {

struct ZoneText {
  std::string apex;  ///< "example.test"
  std::string text;  ///< zone file contents; its SOA serial must grow on each replace
};

class Knot {
 public:
  /// Starts knotd for `zones`; nullptr (with a gtest failure recorded) if it does not come up.
  static std::unique_ptr<Knot> start(const std::vector<ZoneText>& zones);
  ~Knot();
  Knot(const Knot&) = delete;
  Knot& operator=(const Knot&) = delete;

  uint16_t port() const noexcept { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const noexcept { return child_ ? child_->pid() : -1; }
  /// Rewrites the zone and reloads it; true once `serial` is served.
  bool replace_zone(const ZoneText& zone, uint32_t serial);

 private:
  Knot() = default;
  bool wait_serial(const std::string& apex, uint32_t serial, int timeout_ms);
  test::TempDir dir_{"hg-knot"};
  uint16_t port_ = 0;
  std::unique_ptr<test::Child> child_;
};

/// A real Unbound on 127.0.0.1 (a kernel-picked port) as a recursive resolver whose one zone
/// `apex` is a stub zone pointing at 127.0.0.1:`auth_port` (knotd): an RRset cache that keeps
/// each RRset on its own TTL (RFC 2181), unlike hourglassd's per-answer entries. No validator,
/// no prefetch; nothing leaves loopback. Stopped by its PID.
class Unbound {
 public:
  /// nullptr (with a gtest failure recorded) if it does not answer for `apex` within 15 s.
  static std::unique_ptr<Unbound> start(const std::string& apex, uint16_t auth_port);
  ~Unbound();
  Unbound(const Unbound&) = delete;
  Unbound& operator=(const Unbound&) = delete;
  uint16_t port() const noexcept { return port_; }

 private:
  Unbound() = default;
  test::TempDir dir_{"hg-unbound"};
  uint16_t port_ = 0;
  std::unique_ptr<test::Child> child_;
};

using test::free_port;  // tests/support/ports.h
/// A UDP port on 127.0.0.1 on which a socket is bound that never answers: queries to it time
/// out. Kept open by the returned object.
class SilentPort {
 public:
  SilentPort();
  ~SilentPort();
  uint16_t port() const noexcept { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

using RunResult = test::CommandResult;

/// Runs a shell command (wrapped in `timeout`), collecting its output and exit code.
RunResult run(const std::string& command, int timeout_seconds = 60);
/// `hourglass-rehearse ARGS` through run().
RunResult rehearse(const std::string& args, int timeout_seconds = 60);
/// The path of the built hourglass-rehearse.
std::string rehearse_path();

using TempDir = test::TempDir;

std::string read_file(const std::string& path);
/// Extracts one value from a JSON file with python3's json module: `expr` is a Python
/// expression over `d`, e.g. d["names"][0]["lower_by"]. "ERROR: ..." when it fails.
std::string json_get(const std::string& path, const std::string& expr);

}  // namespace hg::rehearse_test
