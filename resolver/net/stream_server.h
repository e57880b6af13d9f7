// StreamServer: the small request/reply server under the control socket and the metrics
// endpoint — accepts stream connections (unix or TCP) on a listening socket, buffers what each
// client sends, hands the buffered bytes to a protocol handler, and writes its replies back.
// All on one EventLoop, never blocking: every read and write is non-blocking, and each
// connection is bounded in what it may buffer, how long it may idle, and how many there are.
//
//   client ──bytes──▶ in_ (≤ max_request) ──handler──▶ out_ ──send──▶ client
//                                            └─ more(): the rest of a long reply (a cache
//                                               dump), produced only as out_ drains
//
// Bounds, so an operator's tool — or anything else that can reach the socket — cannot hurt
// the worker it shares a loop with: at most max_connections (further ones are closed at
// once), max_request bytes of unanswered input, an idle timeout, and reading paused while
// more than high_water bytes of reply wait to be sent. A long reply is produced in chunks, so
// the loop goes back to serving queries between them.
//
// Admission (resolver/net/conn_admission.h), for a server reachable over the network: an allow
// list checked at accept (others are reset, nothing read), a per-source limit, and — with
// evict_idle — the oldest idle connection closed to make room when the table or a source's
// share is full, plus a request timeout, so idle connections cannot lock a client out. Out of
// descriptors, accepting pauses for 100 ms rather than spin on a level-triggered listener.
//
// Knows nothing of DNS or of either protocol (docs/architecture.md §1: the event loop's users are
// layered).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resolver/net/conn_admission.h"
#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"

namespace hg::resolver {

struct StreamServerSettings {
  /// Input buffered without a complete request; the handler is then told (Input::full).
  std::size_t max_request = 4096;
  unsigned max_connections = 16;
  std::chrono::milliseconds idle_timeout{30000};
  /// Reading pauses, and more() is not asked for more, while this much output is queued.
  std::size_t high_water = 64 * 1024;
  /// Connections one source (conn_admission.h) may hold; 0: no limit.
  unsigned max_per_source = 0;
  /// When the table or a source's share is full, close the oldest idle connection (nothing
  /// being sent to it) to make room, rather than refuse the new one.
  bool evict_idle = false;
  /// A connection waiting for a request must have it complete within this long of the time
  /// it began waiting (its accept, or its last reply sent); 0: only idle_timeout applies.
  std::chrono::milliseconds request_timeout{0};
  /// Peers that may connect; empty: everyone (a unix socket's peers have no address).
  std::vector<Cidr> allow{};
  /// Where admission is counted; may be null.
  ConnCounters* counters = nullptr;
};

class StreamServer {
 public:
  /// What the handler made of the input.
  struct Reply {
    /// Input bytes used up. 0 with nothing written to `out` means "incomplete: wait for more".
    std::size_t consumed = 0;
    /// Close the connection once everything (including more()) has been sent.
    bool close = false;
    /// The rest of a long reply: appends a chunk to `out` and returns true while there is
    /// more to come. Called on the loop thread whenever the queued output falls below
    /// high_water; no further input is handled until it returns false. A call that returns
    /// true having appended nothing yields to the loop (the next call comes on its next
    /// iteration), so a long walk that has nothing to print yet does not stall it.
    std::function<bool(std::string& out)> more{};
  };
  /// Called on the loop thread with every unconsumed input byte of one connection, `full`
  /// when they reached max_request (the handler should then answer with an error and close).
  /// Appends its reply to `out`.
  using Handler = std::function<Reply(std::string_view input, bool full, std::string& out)>;

  /// Serves connections accepted from `listen_fd`, a non-blocking listening socket that the
  /// server takes over (and closes). Returns nullptr, errno set, if the loop refuses the fd.
  static std::unique_ptr<StreamServer> start(EventLoop& loop, int listen_fd,
                                             StreamServerSettings settings, Handler handler);
  /// Closes the listening socket and every connection (call on the loop thread, or after the
  /// loop has stopped).
  ~StreamServer();
  StreamServer(const StreamServer&) = delete;
  StreamServer& operator=(const StreamServer&) = delete;

  std::size_t connections() const noexcept { return conns_.size(); }

 private:
  struct Conn {
    int fd = -1;
    uint64_t serial = 0;  // tells a reused fd number apart in timers
    std::string in;
    std::string out;
    std::size_t out_sent = 0;
    std::function<bool(std::string&)> more;
    TimerId idle_timer{};
    MonoTime timer_at{};  ///< when idle_timer fires
    MonoTime last_activity{};
    MonoTime waiting_since{};  ///< when it last began waiting for a request
    SourceKey source{};
    bool waiting = true;  ///< nothing to send: waiting for (the rest of) a request
    bool close_after = false;
    bool peer_closed = false;
  };

  StreamServer(EventLoop& loop, int fd, StreamServerSettings settings, Handler handler);
  void on_accept();
  void admit(int fd, const sockaddr* sa);
  /// Closes the oldest idle connection (of `only`'s source when given): false if none is.
  bool make_room(const SourceKey* only);
  void pause_accepting();
  void resume_accepting();
  using Counter = std::atomic<uint64_t> ConnCounters::*;
  void count(Counter which) noexcept {
    if (settings_.counters != nullptr) settings_.counters->add(settings_.counters->*which);
  }
  void on_events(int fd, FdEvents ev);
  void read_some(Conn& c);
  void handle_input(Conn& c);
  void fill_output(Conn& c);
  void flush(Conn& c);
  /// Closes `c` if it is done; otherwise sets the interest it needs. False when closed.
  bool settle(Conn& c);
  void arm_idle_timer(Conn& c);
  void on_idle(int fd, uint64_t serial);
  void close_conn(int fd);

  EventLoop& loop_;
  int fd_;
  StreamServerSettings settings_;
  Handler handler_;
  uint64_t next_serial_ = 1;
  bool accepting_ = false;
  TimerId resume_timer_{};  ///< accepting paused for lack of descriptors
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  SourceCounts sources_;
};

}  // namespace hg::resolver
