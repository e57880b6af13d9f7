// EngineHarness: a QueryEngine on a test clock whose upstream queries are not sent but wait
// in sent_, each with the callback that delivers its answer, for the test to answer, fail or
// leave unanswered. Answers the engine completes later go to sink_, which the test sets.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <span>

#include "resolver/query/query_engine.h"
#include "tests/wire/packet_builder.h"

namespace hg::resolver {

class EngineHarness : public ::testing::Test {
 protected:
  /// An upstream query the engine made, and how to answer it.
  struct Sent {
    wire::test::Bytes query;
    Upstream::Callback done;
  };

  explicit EngineHarness(const Config& config)
      : loop_(EventLoop::Options{.clock = [this] { return now_; }}),
        shared_(config),
        engine_(
            shared_, loop_,
            [this](std::span<const uint8_t> q, Upstream::Callback done) {
              sent_.push_back({wire::test::Bytes(q.begin(), q.end()), std::move(done)});
            },
            0) {
    route_.sink = &sink_;
    tick();
  }

  /// Runs whatever timers are due at now_.
  void tick() { loop_.run_once(Millis{0}); }

  /// The oldest upstream query still waiting for its answer (a test failure when none is).
  Sent take_sent() {
    EXPECT_FALSE(sent_.empty()) << "no upstream query is waiting";
    if (sent_.empty()) return {};
    Sent s = std::move(sent_.front());
    sent_.pop_front();
    return s;
  }

  MonoTime now_{Millis{10'000'000}};
  EventLoop loop_;
  Shared shared_;
  QueryEngine engine_;
  std::deque<Sent> sent_;
  std::function<void(std::span<const uint8_t>)> sink_;
  Route route_;
};

}  // namespace hg::resolver
