// EventLoop: one thread's epoll loop — fd readiness, one-shot timers, and work posted from
// other threads. It knows nothing of DNS: listeners, the upstream channel and the control
// socket all sit on top of it.
//
// Threading: everything is called on the loop's own thread, except post() and stop(), which
// any thread may call. Callbacks run on the loop thread, one at a time, and may freely add,
// modify or remove watches and timers (including their own).
//
// Time: now() is the monotonic clock read once per loop iteration (after epoll_wait
// returns) and cached, so every callback of one iteration sees the same instant and the hot
// path does not pay for clock_gettime. A test can substitute the clock (Options::clock) and
// drive the loop with run_once(0ms), so timer logic is tested without sleeping.
//
// Must not include anything DNS-related (docs/architecture.md §1).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <sys/epoll.h>

namespace hg::resolver {

/// Monotonic milliseconds (CLOCK_MONOTONIC); only differences are meaningful.
using Millis = std::chrono::milliseconds;
using MonoTime = std::chrono::time_point<std::chrono::steady_clock, Millis>;

/// A MonoTime as a plain number of milliseconds (for atomics and logs).
inline int64_t ms_since_epoch(MonoTime t) {
  return t.time_since_epoch().count();
}

/// Which readiness a watch wants to hear about.
enum class Interest : uint8_t {
  /// Registered but silent. epoll still reports EPOLLERR and EPOLLHUP (both ends closed),
  /// level-triggered: on either, close the fd or the loop keeps waking for it.
  None = 0,
  Read = 1,
  Write = 2,
  ReadWrite = 3,
};

/// What epoll reported for one fd in one iteration.
struct FdEvents {
  bool readable = false;
  bool writable = false;
  bool error = false;   ///< EPOLLERR: a pending socket error (read SO_ERROR or the next recv)
  bool hangup = false;  ///< EPOLLHUP / EPOLLRDHUP: the peer closed
};

/// Handle of a timer; 0 is never a valid timer.
struct TimerId {
  uint64_t value = 0;
  explicit operator bool() const noexcept { return value != 0; }
  friend bool operator==(TimerId, TimerId) = default;
};

class EventLoop {
 public:
  using FdCallback = std::function<void(FdEvents)>;
  using Callback = std::function<void()>;
  using ClockFn = std::function<MonoTime()>;

  struct Options {
    /// Replaces the monotonic clock (tests). Read once per iteration, on the loop thread.
    ClockFn clock{};
    /// At most this many fd events are taken from epoll per iteration.
    int max_events = 256;
    /// At most this many due timers run per iteration; the rest run in the next one, after
    /// the sockets have been read. Without a bound, thousands of retransmission timers falling
    /// due together (a flood of misses to a dead upstream) would keep the loop away from its
    /// listeners for as long as they take, and cached names would go unanswered meanwhile.
    std::size_t max_timers = 256;
  };

  /// Creates the epoll instance and the wake-up eventfd.
  /// Throws std::system_error if the kernel refuses either (start-up only, never later).
  EventLoop();
  explicit EventLoop(Options options);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // --- fd watches (loop thread only) -------------------------------------------------------

  /// Starts watching `fd` (which the caller keeps owning) for `interest`. One watch per fd.
  /// Returns false with errno set if epoll refuses (EEXIST when `fd` is already watched).
  [[nodiscard]] bool add_fd(int fd, Interest interest, FdCallback callback);
  /// Changes the interest of a watched fd. Returns false (errno set) if it is not watched.
  bool modify_fd(int fd, Interest interest);
  /// Stops watching `fd`; call before closing it. Events already collected for it in the
  /// current iteration are discarded, even if the fd number is reused by a new watch.
  /// Returns false if `fd` was not watched.
  bool remove_fd(int fd);
  /// remove_fd() without the epoll_ctl system call, for a caller that closes `fd` at once:
  /// close() takes the fd out of the epoll set itself (the descriptor must not have been
  /// duplicated). An event still reported for it is discarded, as after remove_fd().
  bool forget_fd(int fd);
  bool watching(int fd) const noexcept;

  // --- timers (loop thread only) -----------------------------------------------------------

  /// Runs `callback` once, at the first iteration at or after now() + delay. Timers due at
  /// the same instant run in the order they were added. A timer added by a callback never
  /// runs in the same iteration, even with delay 0, so a timer cannot starve the fds.
  TimerId add_timer(Millis delay, Callback callback);
  /// Same, at an absolute time.
  TimerId add_timer_at(MonoTime when, Callback callback);
  /// Cancels a pending timer. Returns false if it already ran or was cancelled.
  bool cancel_timer(TimerId id);
  std::size_t pending_timers() const noexcept { return live_timers_; }

  // --- cross-thread (any thread) -----------------------------------------------------------

  /// Queues `task` to run on the loop thread at its next iteration and wakes the loop.
  /// Tasks run in the order posted. Safe from any thread, including the loop's own.
  void post(Callback task);
  /// Makes run() return after the current iteration. Safe from any thread.
  void stop();

  // --- running (loop thread) ---------------------------------------------------------------

  /// Runs iterations until stop() is called. The thread that calls run() is the loop thread.
  void run();
  /// Runs one iteration: waits at most `max_wait` (negative: until something happens) for
  /// fds, then dispatches fd events, posted tasks and due timers. Returns the number of
  /// callbacks run.
  std::size_t run_once(Millis max_wait);
  /// The loop whose iteration is running on this thread, or nullptr outside of one.
  static EventLoop* current() noexcept;
  /// Runs `task` once at the end of the current iteration, after the fds, posted tasks and
  /// timers (loop thread only). For work an iteration gathers and finishes in one go, e.g.
  /// the answers of many upstream responses sent with one sendmmsg. A task added by such a
  /// task runs in the same iteration.
  void at_iteration_end(Callback task);
  /// The time cached at the start of the current iteration.
  MonoTime now() const noexcept { return now_; }
  /// The same instant in microseconds (with a substituted clock: its milliseconds × 1000).
  std::chrono::microseconds now_us() const noexcept { return now_us_; }
  /// Re-reads the clock (e.g. after a long computation inside a callback).
  MonoTime update_now();

 private:
  struct Watch {
    FdCallback callback;
    uint32_t generation = 0;
  };
  struct TimerEntry {
    MonoTime when;
    uint64_t id;     // ids grow monotonically, so they also order timers due at the same time
    uint64_t timer;  // the TimerId's value: which slot, and which use of it
    bool operator>(const TimerEntry& o) const noexcept {
      return when != o.when ? when > o.when : id > o.id;
    }
  };

  int epoll_timeout(Millis max_wait);
  std::size_t dispatch_fds(int n);
  std::size_t run_posted();
  std::size_t run_timers();
  void drain_wake_fd();
  void compact_heap_if_wasteful();

  Options options_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  MonoTime now_{};
  std::chrono::microseconds now_us_{};
  bool real_clock_ = true;  // no clock substituted: now_us_ keeps the microseconds

  // Indexed by fd. unique_ptr so a callback keeps a stable Watch while others are added.
  std::vector<std::unique_ptr<Watch>> watches_;
  // Watches removed during dispatch, destroyed after it, so a callback may remove itself.
  std::vector<std::unique_ptr<Watch>> graveyard_;
  uint32_t next_generation_ = 1;
  std::vector<epoll_event> events_;

  // Deadlines wait in a queue (those added in deadline order) and a min-heap
  // (std::push_heap with greater<>, the rest). Cancelling only frees the timer's slot; the
  // entry is skipped when it surfaces, and both are rid of dead entries when those outnumber
  // live ones (a deadline timer per query, usually cancelled).
  // The callbacks live in slots reused through a free list, so adding a timer allocates
  // nothing once the loop has run a while. A TimerId's value is the slot's generation (high
  // 32 bits, never 0, bumped when the slot is freed) and its index (low 32 bits): an id of a
  // timer that ran or was cancelled no longer matches its slot.
  struct TimerSlot {
    Callback callback;
    uint32_t generation = 1;
    bool live = false;
  };
  bool timer_live(uint64_t timer) const noexcept {
    const auto slot = static_cast<uint32_t>(timer);
    return slot < timer_slots_.size() && timer_slots_[slot].live &&
           timer_slots_[slot].generation == static_cast<uint32_t>(timer >> 32);
  }
  Callback take_timer(uint64_t timer);
  // Most timers are added in deadline order (the same delay from a clock that only moves
  // forward: a query's deadline, its retransmission): those go to the back of queue_, in
  // O(1), and leave from its front. Only a timer due earlier than the queue's last goes to
  // the heap. The next timer is the earlier of the two fronts.
  bool first_in_queue() const noexcept;  // queue_'s front is the next timer (not both empty)
  void pop_first_timer();
  const TimerEntry& first_timer() const noexcept {
    return first_in_queue() ? queue_.front() : heap_.front();
  }
  bool no_timers() const noexcept { return heap_.empty() && queue_.empty(); }
  std::vector<TimerEntry> heap_;
  std::deque<TimerEntry> queue_;
  std::vector<TimerSlot> timer_slots_;
  std::vector<uint32_t> free_timer_slots_;
  std::size_t live_timers_ = 0;
  uint64_t next_timer_id_ = 1;

  std::mutex posted_mu_;
  std::vector<Callback> posted_;  // guarded by posted_mu_
  std::vector<Callback> running_posted_;
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stop_{false};
  std::vector<Callback> end_tasks_;  // at_iteration_end
  std::vector<Callback> running_end_tasks_;
};

}  // namespace hg::resolver
