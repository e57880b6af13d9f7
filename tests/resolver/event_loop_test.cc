// EventLoop tests. Timer logic runs on a manual clock driven with run_once(0ms), so nothing
// here sleeps; fd tests use pipes, cross-thread tests a second thread.
#include "resolver/net/event_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace hg::resolver {
namespace {

using namespace std::chrono_literals;

class ManualTime {
 public:
  MonoTime now() const { return t_; }
  void advance(Millis d) { t_ += d; }
  EventLoop::Options options() {
    return EventLoop::Options{.clock = [this] { return t_; }};
  }

 private:
  MonoTime t_{Millis{1'000'000}};
};

struct Pipe {
  int r = -1;
  int w = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  void put() { ASSERT_EQ(write(w, "x", 1), 1); }
};

// now_us() is the iteration's instant in microseconds: from a substituted clock its
// milliseconds exactly; from the real clock the same read as now(), so they agree to the ms.
TEST(EventLoopClock, NowUsIsTheIterationsInstantInMicroseconds) {
  ManualTime t;
  EventLoop fake(t.options());
  EXPECT_EQ(fake.now_us(), std::chrono::microseconds{1'000'000'000});
  t.advance(1234ms);
  fake.run_once(0ms);
  EXPECT_EQ(fake.now_us(), std::chrono::microseconds{1'001'234'000});
  EXPECT_EQ(fake.now_us(), fake.now().time_since_epoch());

  EventLoop real;
  for (int i = 0; i < 3; ++i) {
    const auto before = std::chrono::steady_clock::now();
    real.run_once(0ms);
    const auto after = std::chrono::steady_clock::now();
    const auto us = real.now_us();
    EXPECT_EQ(std::chrono::floor<Millis>(us), real.now().time_since_epoch());
    EXPECT_GE(us, std::chrono::floor<std::chrono::microseconds>(before.time_since_epoch()));
    EXPECT_LE(us, std::chrono::ceil<std::chrono::microseconds>(after.time_since_epoch()));
  }
}

TEST(EventLoopTimer, RunsTimersInDeadlineOrderThenAdditionOrder) {
  ManualTime clock;
  EventLoop loop(clock.options());
  std::string order;
  loop.add_timer(30ms, [&] { order += "c"; });
  loop.add_timer(10ms, [&] { order += "a"; });
  loop.add_timer(20ms, [&] { order += "b"; });
  loop.add_timer(10ms, [&] { order += "A"; });
  clock.advance(100ms);
  loop.run_once(0ms);
  EXPECT_EQ(order, "aAbc");
  EXPECT_EQ(loop.pending_timers(), 0u);
}

// Timers added in deadline order go to a queue, the others to a heap (event_loop.h). Mixed
// both ways, with most of them cancelled (so the dead entries are also compacted away), the
// survivors run in deadline order, then addition order.
TEST(EventLoopTimer, QueueAndHeapTogetherKeepDeadlineThenAdditionOrder) {
  ManualTime clock;
  EventLoop loop(clock.options());
  std::mt19937 rng(20261201);
  struct Added {
    Millis delay;
    int seq;
    TimerId id;
    bool cancelled = false;
  };
  std::vector<Added> added;
  std::vector<int> ran;
  Millis next{0};
  for (int i = 0; i < 3000; ++i) {
    // Mostly later than the last one (queue), one in five earlier (heap), some equal.
    Millis delay = next;
    if (rng() % 5 == 0) {
      delay = Millis{static_cast<int64_t>(rng() % (static_cast<uint64_t>(next.count()) + 1))};
    } else {
      next += Millis{static_cast<int64_t>(rng() % 3)};
      delay = next;
    }
    added.push_back({delay, i, loop.add_timer(delay, [&ran, i] { ran.push_back(i); })});
  }
  EXPECT_EQ(loop.pending_timers(), 3000u);
  for (Added& a : added) {
    if (rng() % 10 < 6) {
      EXPECT_TRUE(loop.cancel_timer(a.id));
      a.cancelled = true;
    }
  }
  std::vector<Added> want;
  for (const Added& a : added)
    if (!a.cancelled) want.push_back(a);
  std::stable_sort(want.begin(), want.end(),
                   [](const Added& x, const Added& y) { return x.delay < y.delay; });
  EXPECT_EQ(loop.pending_timers(), want.size());
  for (int step = 0; step < 10000 && loop.pending_timers() > 0; ++step) {
    clock.advance(7ms);
    loop.run_once(0ms);
  }
  ASSERT_EQ(ran.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(ran[i], want[i].seq) << "position " << i;
}

TEST(EventLoopTimer, DoesNotRunBeforeItsDeadline) {
  ManualTime clock;
  EventLoop loop(clock.options());
  int ran = 0;
  loop.add_timer(50ms, [&] { ++ran; });
  clock.advance(49ms);
  loop.run_once(0ms);
  EXPECT_EQ(ran, 0);
  clock.advance(1ms);
  loop.run_once(0ms);
  EXPECT_EQ(ran, 1);
}

TEST(EventLoopTimer, CancelledTimerNeverRuns) {
  ManualTime clock;
  EventLoop loop(clock.options());
  int ran = 0;
  TimerId a = loop.add_timer(10ms, [&] { ran += 1; });
  loop.add_timer(10ms, [&] { ran += 10; });
  EXPECT_TRUE(loop.cancel_timer(a));
  EXPECT_FALSE(loop.cancel_timer(a));
  clock.advance(10ms);
  loop.run_once(0ms);
  EXPECT_EQ(ran, 10);
}

TEST(EventLoopTimer, CancelAfterRunReturnsFalse) {
  ManualTime clock;
  EventLoop loop(clock.options());
  TimerId a = loop.add_timer(0ms, [] {});
  loop.run_once(0ms);
  EXPECT_FALSE(loop.cancel_timer(a));
  EXPECT_FALSE(loop.cancel_timer(TimerId{}));
}

TEST(EventLoopTimer, CallbackCanCancelALaterTimerOfTheSameIteration) {
  ManualTime clock;
  EventLoop loop(clock.options());
  int ran = 0;
  TimerId second;
  loop.add_timer(5ms, [&] { loop.cancel_timer(second); });
  second = loop.add_timer(5ms, [&] { ++ran; });
  clock.advance(5ms);
  loop.run_once(0ms);
  EXPECT_EQ(ran, 0);
}

TEST(EventLoopTimer, TimerAddedByCallbackWaitsForNextIteration) {
  ManualTime clock;
  EventLoop loop(clock.options());
  int inner = 0;
  loop.add_timer(0ms, [&] { loop.add_timer(0ms, [&] { ++inner; }); });
  loop.run_once(0ms);
  EXPECT_EQ(inner, 0);
  loop.run_once(0ms);
  EXPECT_EQ(inner, 1);
}

TEST(EventLoopTimer, AbsoluteTimeInThePastRunsAtNextIteration) {
  ManualTime clock;
  EventLoop loop(clock.options());
  int ran = 0;
  loop.add_timer_at(clock.now() - 1h, [&] { ++ran; });
  loop.run_once(0ms);
  EXPECT_EQ(ran, 1);
}

TEST(EventLoopTimer, ManyCancelledTimersLeaveLiveOnesInOrder) {
  ManualTime clock;
  EventLoop loop(clock.options());
  std::vector<int> fired;
  std::vector<TimerId> ids;
  for (int i = 0; i < 5000; ++i) {
    ids.push_back(loop.add_timer(Millis{i}, [&fired, i] { fired.push_back(i); }));
  }
  for (int i = 0; i < 5000; ++i) {
    if (i % 500 != 0) loop.cancel_timer(ids[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(loop.pending_timers(), 10u);
  clock.advance(10s);
  loop.run_once(0ms);
  EXPECT_EQ(fired, (std::vector<int>{0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500}));
}

TEST(EventLoopTimer, StaleIdDoesNotCancelTheTimerThatReusedItsSlot) {
  // Timers live in reused slots: the id of a timer that ran or was cancelled must not reach
  // the newer timer now in its slot, however often the slot has been reused.
  ManualTime clock;
  EventLoop loop(clock.options());
  int ran = 0;
  TimerId cancelled = loop.add_timer(5ms, [&] { ran += 100; });
  EXPECT_TRUE(loop.cancel_timer(cancelled));
  TimerId done = loop.add_timer(0ms, [&] { ran += 1; });
  loop.run_once(0ms);
  EXPECT_EQ(ran, 1);
  std::vector<TimerId> old;
  for (int i = 0; i < 100; ++i) {
    old.push_back(loop.add_timer(1ms, [] {}));
    EXPECT_TRUE(loop.cancel_timer(old.back()));
  }
  TimerId live = loop.add_timer(5ms, [&] { ran += 10; });
  EXPECT_FALSE(loop.cancel_timer(cancelled));
  EXPECT_FALSE(loop.cancel_timer(done));
  for (TimerId t : old)
    EXPECT_FALSE(loop.cancel_timer(t));
  EXPECT_EQ(loop.pending_timers(), 1u);
  clock.advance(5ms);
  loop.run_once(0ms);
  EXPECT_EQ(ran, 11);
  EXPECT_FALSE(loop.cancel_timer(live));
  EXPECT_EQ(loop.pending_timers(), 0u);
}

TEST(EventLoopTimer, CancellingDestroysTheCallbackAtOnce) {
  ManualTime clock;
  EventLoop loop(clock.options());
  auto token = std::make_shared<int>(0);
  TimerId t = loop.add_timer(5ms, [token] {});
  EXPECT_EQ(token.use_count(), 2);
  EXPECT_TRUE(loop.cancel_timer(t));
  EXPECT_EQ(token.use_count(), 1);
  loop.add_timer(0ms, [token] {});
  loop.run_once(0ms);
  EXPECT_EQ(token.use_count(), 1);  // ran, and is gone
}

TEST(EventLoopTimer, ManyDueTimersRunInSlicesWithTheSocketsReadBetween) {
  // 600 timers due at once (a flood's retransmissions) must not keep a readable socket
  // waiting until all of them have run: each iteration runs at most max_timers of them, in
  // deadline order, and dispatches the ready fds first.
  ManualTime clock;
  auto options = clock.options();
  options.max_timers = 256;
  EventLoop loop(options);
  Pipe p;
  std::vector<int> fired;
  int fd_seen_after = -1;
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [&](FdEvents) {
    char c;
    while (read(p.r, &c, 1) == 1) {
    }
    fd_seen_after = static_cast<int>(fired.size());
  }));
  for (int i = 0; i < 600; ++i)
    loop.add_timer(Millis{i % 7}, [&fired, i] { fired.push_back(i); });
  clock.advance(1s);
  p.put();
  loop.run_once(0ms);
  EXPECT_EQ(fd_seen_after, 0);  // the socket before any timer
  EXPECT_EQ(fired.size(), 256u);
  p.put();
  loop.run_once(0ms);
  EXPECT_EQ(fd_seen_after, 256);  // and again between the first and the second slice
  EXPECT_EQ(fired.size(), 512u);
  loop.run_once(1000ms);  // due timers remain: the loop must not block waiting for an fd
  ASSERT_EQ(fired.size(), 600u);
  // Every timer ran exactly once, in deadline order, then order of addition.
  std::vector<int> expected(600);
  for (int i = 0; i < 600; ++i)
    expected[static_cast<std::size_t>(i)] = i;
  std::stable_sort(expected.begin(), expected.end(), [](int a, int b) { return a % 7 < b % 7; });
  EXPECT_EQ(fired, expected);
}

TEST(EventLoopClock, NowIsReadOncePerIteration) {
  ManualTime clock;
  EventLoop loop(clock.options());
  MonoTime seen_first{}, seen_second{};
  loop.add_timer(0ms, [&] {
    seen_first = loop.now();
    clock.advance(5s);  // time passes inside a callback...
  });
  loop.add_timer(0ms, [&] { seen_second = loop.now(); });  // ...but not for the next one
  loop.run_once(0ms);
  EXPECT_EQ(seen_first, seen_second);
  loop.run_once(0ms);
  EXPECT_EQ(loop.now(), seen_first + 5s);
}

TEST(EventLoopTimer, RealClockTimerFiresAfterItsDelay) {
  EventLoop loop;
  auto start = std::chrono::steady_clock::now();
  bool fired = false;
  loop.add_timer(20ms, [&] {
    fired = true;
    loop.stop();
  });
  loop.run();
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(fired);
  EXPECT_GE(elapsed, 19ms);  // the clock is floored to whole milliseconds
  EXPECT_LT(elapsed, 1s);
}

TEST(EventLoopFd, ReadableFdCallsItsCallback) {
  EventLoop loop;
  Pipe p;
  int calls = 0;
  FdEvents got;
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [&](FdEvents ev) {
    ++calls;
    got = ev;
  }));
  loop.run_once(0ms);
  EXPECT_EQ(calls, 0);
  p.put();
  loop.run_once(1000ms);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(got.readable);
  EXPECT_FALSE(got.writable);
}

TEST(EventLoopFd, WriteInterestReportsWritable) {
  EventLoop loop;
  Pipe p;
  FdEvents got;
  ASSERT_TRUE(loop.add_fd(p.w, Interest::Write, [&](FdEvents ev) { got = ev; }));
  loop.run_once(1000ms);
  EXPECT_TRUE(got.writable);
}

TEST(EventLoopFd, ModifyToNoneSilencesAndBackToReadWakes) {
  EventLoop loop;
  Pipe p;
  int calls = 0;
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [&](FdEvents) { ++calls; }));
  p.put();
  ASSERT_TRUE(loop.modify_fd(p.r, Interest::None));
  loop.run_once(0ms);
  EXPECT_EQ(calls, 0);
  ASSERT_TRUE(loop.modify_fd(p.r, Interest::Read));
  loop.run_once(1000ms);
  EXPECT_EQ(calls, 1);
}

TEST(EventLoopFd, HalfClosedSocketAtInterestNoneStaysQuiet) {
  EventLoop loop;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  int calls = 0;
  FdEvents got;
  ASSERT_TRUE(loop.add_fd(sv[0], Interest::None, [&](FdEvents ev) {
    ++calls;
    got = ev;
  }));
  ASSERT_EQ(shutdown(sv[1], SHUT_WR), 0);  // the peer half-closes
  loop.run_once(0ms);
  EXPECT_EQ(calls, 0);
  ASSERT_TRUE(loop.modify_fd(sv[0], Interest::Read));
  loop.run_once(1000ms);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(got.readable);
  EXPECT_TRUE(got.hangup);  // EPOLLRDHUP, reported with read interest
  loop.remove_fd(sv[0]);
  close(sv[0]);
  close(sv[1]);
}

TEST(EventLoopFd, SecondWatchOnSameFdIsRefused) {
  EventLoop loop;
  Pipe p;
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [](FdEvents) {}));
  EXPECT_FALSE(loop.add_fd(p.r, Interest::Read, [](FdEvents) {}));
  EXPECT_EQ(errno, EEXIST);
  EXPECT_TRUE(loop.remove_fd(p.r));
  EXPECT_FALSE(loop.remove_fd(p.r));
  EXPECT_FALSE(loop.modify_fd(p.r, Interest::Read));
}

TEST(EventLoopFd, ForgottenAndClosedFdIsGoneAndItsNumberCanBeWatchedAgain) {
  EventLoop loop;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
  int old_calls = 0;
  ASSERT_TRUE(loop.add_fd(sv[0], Interest::Read, [&](FdEvents) { ++old_calls; }));
  ASSERT_EQ(send(sv[1], "x", 1, 0), 1);  // readable: an event is pending for the old watch
  EXPECT_TRUE(loop.forget_fd(sv[0]));
  EXPECT_FALSE(loop.watching(sv[0]));
  EXPECT_FALSE(loop.forget_fd(sv[0]));
  const int number = sv[0];
  close(sv[0]);
  loop.run_once(0ms);
  EXPECT_EQ(old_calls, 0);
  // The same number, a new socket: watched afresh (close() took the old one out of epoll).
  int again[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, again), 0);
  ASSERT_EQ(again[0], number);
  int new_calls = 0;
  ASSERT_TRUE(loop.add_fd(again[0], Interest::Read, [&](FdEvents) { ++new_calls; }));
  ASSERT_EQ(send(again[1], "y", 1, 0), 1);
  loop.run_once(1000ms);
  EXPECT_EQ(new_calls, 1);
  EXPECT_EQ(old_calls, 0);
  loop.remove_fd(again[0]);
  close(again[0]);
  close(again[1]);
  close(sv[1]);
}

TEST(EventLoopFd, CallbackMayRemoveItsOwnWatch) {
  EventLoop loop;
  Pipe p;
  int calls = 0;
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [&, fd = p.r](FdEvents) {
    ++calls;
    loop.remove_fd(fd);
  }));
  p.put();
  loop.run_once(1000ms);
  loop.run_once(0ms);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(loop.watching(p.r));
}

TEST(EventLoopFd, WatchRemovedEarlierInTheIterationIsNotCalled) {
  EventLoop loop;
  Pipe a, b;
  int a_calls = 0, b_calls = 0;
  // Whichever runs first removes the other; exactly one of them may run.
  ASSERT_TRUE(loop.add_fd(a.r, Interest::Read, [&](FdEvents) {
    ++a_calls;
    loop.remove_fd(b.r);
  }));
  ASSERT_TRUE(loop.add_fd(b.r, Interest::Read, [&](FdEvents) {
    ++b_calls;
    loop.remove_fd(a.r);
  }));
  a.put();
  b.put();
  loop.run_once(1000ms);
  EXPECT_EQ(a_calls + b_calls, 1);
}

TEST(EventLoopFd, ReusedFdNumberDoesNotInheritAStaleEvent) {
  EventLoop loop;
  Pipe a;
  auto b = std::make_unique<Pipe>();
  auto replacement = std::unique_ptr<Pipe>();
  int b_calls = 0, new_calls = 0;
  const int b_fd = b->r;
  // a becomes ready first (epoll's ready list is FIFO), so its callback runs first: it
  // closes b, whose event is already collected, and opens a pipe that reuses b's fd number.
  ASSERT_TRUE(loop.add_fd(a.r, Interest::Read, [&](FdEvents) {
    if (replacement) return;
    loop.remove_fd(b_fd);
    b.reset();
    replacement = std::make_unique<Pipe>();
    ASSERT_TRUE(loop.add_fd(replacement->r, Interest::Read, [&](FdEvents) { ++new_calls; }));
  }));
  ASSERT_TRUE(loop.add_fd(b_fd, Interest::Read, [&](FdEvents) { ++b_calls; }));
  a.put();
  b->put();
  loop.run_once(1000ms);
  if (b_calls != 0) GTEST_SKIP() << "epoll reported b first; nothing to check";
  ASSERT_TRUE(replacement);
  if (replacement->r != b_fd) GTEST_SKIP() << "the kernel did not reuse the fd number";
  EXPECT_EQ(new_calls, 0);  // the new pipe is empty: an event for it would be a lie
  loop.run_once(0ms);
  EXPECT_EQ(new_calls, 0);
  loop.remove_fd(replacement->r);
}

TEST(EventLoopIterationEnd, RunsOnceAfterTheFdsAndTimersOfItsIteration) {
  ManualTime clock;
  EventLoop loop(clock.options());
  Pipe p;
  std::string order;
  EXPECT_EQ(EventLoop::current(), nullptr);
  ASSERT_TRUE(loop.add_fd(p.r, Interest::Read, [&](FdEvents) {
    char c;
    while (read(p.r, &c, 1) == 1) {
    }
    EXPECT_EQ(EventLoop::current(), &loop);
    order += "f";
    loop.at_iteration_end([&] {
      order += "E";
      // One added by an end task still runs in this iteration.
      loop.at_iteration_end([&] { order += "2"; });
    });
  }));
  loop.add_timer(0ms, [&] { order += "t"; });
  p.put();
  clock.advance(1ms);
  loop.run_once(0ms);
  EXPECT_EQ(order, "ftE2");
  EXPECT_EQ(EventLoop::current(), nullptr);
  loop.run_once(0ms);
  EXPECT_EQ(order, "ftE2");  // once only
}

TEST(EventLoopPost, TaskPostedFromAnotherThreadRunsOnTheLoopThread) {
  EventLoop loop;
  std::thread::id loop_thread;
  std::thread::id task_thread;
  std::thread t([&] {
    loop_thread = std::this_thread::get_id();
    loop.run();
  });
  loop.post([&] {
    task_thread = std::this_thread::get_id();
    loop.stop();
  });
  t.join();
  EXPECT_EQ(task_thread, loop_thread);
  EXPECT_NE(task_thread, std::this_thread::get_id());
}

TEST(EventLoopPost, TasksFromEachThreadRunInPostedOrder) {
  EventLoop loop;
  std::vector<int> from_a, from_b;  // touched only on the loop thread
  std::atomic<int> done{0};
  std::thread runner([&] { loop.run(); });
  auto producer = [&](std::vector<int>& out) {
    for (int i = 0; i < 2000; ++i)
      loop.post([&out, i] { out.push_back(i); });
    loop.post([&] {
      if (++done == 2) loop.stop();
    });
  };
  std::thread a([&] { producer(from_a); });
  std::thread b([&] { producer(from_b); });
  a.join();
  b.join();
  runner.join();
  ASSERT_EQ(from_a.size(), 2000u);
  ASSERT_EQ(from_b.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(from_a.begin(), from_a.end()));
  EXPECT_TRUE(std::is_sorted(from_b.begin(), from_b.end()));
}

TEST(EventLoopPost, StopFromAnotherThreadEndsABlockedRun) {
  EventLoop loop;
  std::atomic<bool> running{false};
  std::thread t([&] {
    loop.post([&] { running = true; });
    loop.run();
  });
  while (!running)
    std::this_thread::yield();
  loop.stop();
  t.join();  // would hang if stop() did not wake epoll_wait
  SUCCEED();
}

TEST(EventLoopPost, TaskPostedOnTheLoopThreadRunsNextIteration) {
  EventLoop loop;
  int ran = 0;
  loop.add_timer(0ms, [&] { loop.post([&] { ++ran; }); });
  loop.run_once(0ms);
  EXPECT_EQ(ran, 0);
  loop.run_once(1000ms);
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace hg::resolver
