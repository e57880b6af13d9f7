// TcpListener: DNS over TCP (RFC 7766, RFC 1035 §4.2.2) on the event loop.
//
// Framing: every message is preceded by its length as a 2-byte big-endian integer.
//
//   | len (2) | message (len bytes) | len (2) | message | ...
//
// A connection may carry many queries; each is handed to the handler as soon as it is
// complete, and answers are written as they become ready, in any order (RFC 7766 §6.2.1.1
// pipelining). Nothing blocks: a client that stalls mid-message only holds its own buffer
// until the idle timeout closes it. Limits: concurrent connections per listener, queries
// outstanding per connection (reading pauses at the limit), bytes queued for writing
// (reading pauses while a slow reader's answers pile up).
//
// Admission at accept (resolver/net/conn_admission.h): a peer outside `allow` is reset at once;
// a source at `max_per_source`, or a full table, makes room by closing the oldest idle
// connection (RFC 7766 §6.2.3), else the new one is refused; EMFILE does the same before
// pausing accepts for a moment. So one host cannot keep the listener from a new client.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "resolver/net/conn_admission.h"
#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"

namespace hg::resolver {

class TcpListener;

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  TcpConnection(TcpListener& owner, int fd, Endpoint peer);
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  const Endpoint& peer() const noexcept { return peer_; }
  bool closed() const noexcept { return fd_ < 0; }
  /// Nothing of ours pending: no query being resolved, no answer waiting to be sent. Such a
  /// connection may be closed to make room for a new one.
  bool idle() const noexcept { return outstanding_ == 0 && out_sent_ == out_.size(); }

  /// Queues one answer (the length prefix is added here) and marks one query answered.
  /// Any thread: from another thread the bytes are copied and posted to the loop.
  void answer(std::span<const uint8_t> message);
  /// Marks one query finished without an answer (dropped).
  void no_answer();

 private:
  friend class TcpListener;
  void on_events(FdEvents ev);
  void read_some();
  void dispatch_buffered();
  void finish_or_update();
  void flush();
  void close();
  void update_interest();
  void arm_idle_timer();
  void answer_on_loop(std::span<const uint8_t> message);

  TcpListener& owner_;
  int fd_;
  Endpoint peer_;
  SourceKey source_{};
  uint64_t serial_ = 0;   ///< accept order: breaks ties between equally old idle connections
  bool counted_ = false;  ///< registered in the listener's source counts
  std::vector<uint8_t> in_;
  std::vector<uint8_t> out_;
  std::size_t out_sent_ = 0;
  unsigned outstanding_ = 0;
  TimerId idle_timer_;
  MonoTime last_activity_{};
  MonoTime partial_since_{};  ///< when in_ last went from empty to holding a partial message
  bool peer_closed_ = false;
  bool dispatching_ = false;
};

class TcpListener {
 public:
  struct Settings {
    std::chrono::milliseconds idle_timeout{10000};
    /// A message must be complete this long after its first byte arrived.
    std::chrono::milliseconds partial_timeout{3000};
    unsigned max_connections = 256;
    unsigned max_outstanding = 64;              ///< per connection
    std::size_t max_queued_bytes = 256 * 1024;  ///< per connection
    /// Connections one source (an IPv4 address, an IPv6 /64) may hold; 0: no limit.
    unsigned max_per_source = 64;
    /// Peers that may connect; empty: everyone. Others are reset at accept.
    std::vector<Cidr> allow{};
    /// Where admission is counted (shared by every listener of a kind); may be null.
    ConnCounters* counters = nullptr;
  };
  /// Called on the loop thread with one complete query. Answer it, now or later, with exactly
  /// one conn->answer() or conn->no_answer().
  using Handler =
      std::function<void(std::span<const uint8_t> query, const std::shared_ptr<TcpConnection>&)>;

  static Checked<std::unique_ptr<TcpListener>> open(EventLoop& loop, const Endpoint& addr,
                                                    bool reuse_port, Settings settings,
                                                    Handler handler);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  const Endpoint& local() const noexcept { return local_; }
  std::size_t connections() const noexcept { return conns_.size(); }
  /// Stops accepting (shutdown); open connections are closed when their answers are sent.
  void pause();
  /// Closes every connection now.
  void close_all();

 private:
  friend class TcpConnection;
  TcpListener(EventLoop& loop, int fd, Endpoint local, Settings settings, Handler handler);
  void on_accept();
  /// Admits or refuses one accepted connection (conn_admission.h).
  void admit(int fd, const sockaddr* sa, socklen_t len);
  /// Closes the oldest idle connection (of `only`'s source when given): false if none is idle.
  bool make_room(const SourceKey* only);
  void pause_accepting();
  void forget(int fd, TcpConnection& c);
  void resume_accepting();
  using Counter = std::atomic<uint64_t> ConnCounters::*;
  void count(Counter which) noexcept {
    if (settings_.counters != nullptr) settings_.counters->add(settings_.counters->*which);
  }

  EventLoop& loop_;
  int fd_;
  Endpoint local_;
  Settings settings_;
  Handler handler_;
  std::atomic<std::thread::id> loop_thread_;
  bool paused_ = false;  ///< pause() was called: never accept again
  bool accepting_ = false;
  TimerId resume_timer_{};  ///< accepting paused for lack of descriptors
  std::unordered_map<int, std::shared_ptr<TcpConnection>> conns_;
  SourceCounts sources_;
  uint64_t next_serial_ = 1;
};

}  // namespace hg::resolver
