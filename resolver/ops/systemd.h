// Systemd: the service manager's notification protocol (sd_notify(3)), spoken directly.
//
// With `Type=notify` systemd passes the path of a unix datagram socket in $NOTIFY_SOCKET
// (a leading '@' means the abstract namespace) and waits for "READY=1" before it calls the
// service started. Each message is one datagram of newline-separated VAR=VALUE lines.
// hourglassd sends:
//
//   READY=1               once every listener is bound and the loops run (after the cache
//                         file was loaded), with a STATUS= line
//   STATUS=...            queries and hits so far, every few seconds
//   RELOADING=1           on SIGHUP, with MONOTONIC_USEC=; READY=1 again once every worker
//                         uses the re-read upstreams (or kept the old ones)
//   STOPPING=1            on SIGTERM/SIGINT, before the graceful shutdown starts
//   WATCHDOG=1            with `WatchdogSec=` ($WATCHDOG_USEC, for us when $WATCHDOG_PID is
//                         unset or our PID): every half interval, from worker 0's event loop,
//                         and only while every worker's loop has stamped its heartbeat
//                         within the interval — a wedged loop stops the pings, and systemd
//                         restarts the service
//
// Without $NOTIFY_SOCKET every call is a no-op: the daemon runs the same outside systemd.
// Sending never blocks (MSG_DONTWAIT) and never fails the daemon; it may be called from any
// thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hg::resolver {

class SystemdNotifier {
 public:
  /// Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (for process `pid`).
  static SystemdNotifier from_environment(long pid);
  /// The same from given values (tests); null means unset.
  static SystemdNotifier from_values(const char* notify_socket, const char* watchdog_usec,
                                     const char* watchdog_pid, long pid);
  SystemdNotifier() = default;
  ~SystemdNotifier();
  SystemdNotifier(SystemdNotifier&& other) noexcept;
  SystemdNotifier& operator=(SystemdNotifier&& other) noexcept;
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  /// True when $NOTIFY_SOCKET named a usable socket address.
  bool enabled() const noexcept { return addr_len_ > 0; }
  /// The watchdog interval, when systemd asked this process for pings.
  std::optional<std::chrono::microseconds> watchdog() const noexcept { return watchdog_; }

  /// Sends one message ("READY=1\nSTATUS=..."); false when disabled or the send failed.
  bool send(std::string_view message) const;

 private:
  int fd_ = -1;
  std::string addr_{};  // sockaddr_un bytes
  std::size_t addr_len_ = 0;
  std::optional<std::chrono::microseconds> watchdog_{};
};

/// The watchdog's check (a pure function, for tests): the index of the first loop whose last
/// heartbeat (`beats_ms`, monotonic ms) is older than `limit_ms` at `now_ms`, if any.
std::optional<std::size_t> stuck_loop(std::span<const int64_t> beats_ms, int64_t now_ms,
                                      int64_t limit_ms) noexcept;

}  // namespace hg::resolver
