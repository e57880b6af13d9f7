// Child: a program a test starts (knotd, unbound, openssl s_server, tcpdump, fstrm_capture)
// with its output in a log file. It dies with the test binary (PR_SET_PDEATHSIG), is only
// ever signalled by its own PID, and is stopped (bounded, then SIGKILL) when the Child goes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

namespace hg::test {

class Child {
 public:
  struct Options {
    /// stdin is a pipe the test holds open (openssl s_server ends a connection when its
    /// stdin ends) instead of /dev/null; close_stdin() closes it.
    bool open_stdin = false;
  };
  /// Starts argv[0] (searched in PATH) with stdout and stderr into `log` (created, mode 0600).
  /// If it cannot be started, running() is false (the log is then empty).
  Child(std::vector<std::string> argv, const std::string& log, Options options);
  Child(std::vector<std::string> argv, const std::string& log) : Child(argv, log, Options{}) {}
  /// stop(SIGTERM).
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const noexcept { return pid_; }
  /// Whether it has not exited yet (reaps it if it has).
  bool running();
  void signal(int sig) const;
  /// Sends `sig` (and SIGCONT, in case it was stopped) and waits at most `wait` for it to
  /// exit; true if it did. Otherwise it is SIGKILLed and reaped, and false is returned.
  bool stop(int sig = SIGTERM, std::chrono::milliseconds wait = std::chrono::milliseconds{5000});
  void close_stdin();

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
};

}  // namespace hg::test
