// RedisServer: a real redis-server (Debian's redis-server package) for the fleet tests, on a
// free loopback port found by binding port 0 (redis itself reads port 0 as "no TCP"), in a
// temporary directory, with persistence off. Started as a test::Child (so a killed test
// binary takes it along) and stopped by its PID; restartable on the same port.
//
// cli() runs redis-cli against it (bounded); send_async() writes one command on a fresh
// connection without waiting for the reply (DEBUG SLEEP from the side).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child.h"
#include "tests/support/resp_client.h"

namespace hg::test {

class RedisServer {
 public:
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// Whether redis-server and redis-cli are on the PATH (a test skips without them, and fails
  /// under CI: tests/support/requires.h).
  static bool installed();

  /// Starts redis-server and waits (bounded) until it answers PING. False if it did not. The
  /// first start moves to another free port if the chosen one was taken meanwhile.
  bool start();
  /// SIGTERM, then SIGKILL after 3 s; waits for the process. Idempotent.
  void stop();
  bool running() const noexcept { return child_ != nullptr; }

  /// Set before start(): also listen on a unix socket, mode 0660 (`--unixsocketperm 660`),
  /// at unix_socket_path().
  bool with_unix_socket = false;
  std::string unix_socket_path() const { return dir_ + "/redis.sock"; }

  uint16_t port() const noexcept { return port_; }
  /// "127.0.0.1:PORT", for --redis.
  std::string address() const;

  /// redis-cli -p PORT ARGS... (each argument shell-quoted); stdout without the final newline.
  std::string cli(const std::vector<std::string>& args) const;
  /// Sends `command` on a new connection and leaves the reply unread; the
  /// connection is closed by the destructor (or the next send_async).
  bool send_async(const std::vector<std::string>& command);
  /// Whether the server's main thread is asleep in the kernel's nanosleep (as inside DEBUG
  /// SLEEP, which blocks every client), read from /proc/PID/wchan.
  bool sleeping() const;

 private:
  std::string dir_;
  uint16_t port_ = 0;
  bool launch();

  std::unique_ptr<Child> child_;  ///< while started
  bool started_ = false;          ///< once: a restart keeps the port
  std::unique_ptr<Resp> async_;   ///< send_async()'s connection, reply unread
};

}  // namespace hg::test
