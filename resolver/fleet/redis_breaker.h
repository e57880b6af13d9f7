// CircuitBreaker: when Redis keeps failing (down, slow, full), stop asking it for a while, so
// a sick Redis costs a miss nothing at all instead of --redis-timeout every time.
//
//   Closed ──(`threshold` failures in a row)──> Open ──(cool-down over)──> HalfOpen
//     ^                                          ^                            │
//     └────────────── a success ─────────────────┼──────── one probe ─────────┘
//                                                └──── the probe fails (cool-down doubles,
//                                                      up to max_cooldown)
//
// Closed: every request goes to Redis. Open: none does. HalfOpen: exactly one request (the
// probe) is let through; its outcome closes or re-opens the breaker. Pure logic: time is
// passed in, so tests drive it with a fake clock.
#pragma once

#include <algorithm>
#include <cstdint>

#include "resolver/net/event_loop.h"

namespace hg::resolver {

class CircuitBreaker {
 public:
  enum class State : uint8_t { Closed = 0, Open = 1, HalfOpen = 2 };

  struct Settings {
    int threshold = 5;  ///< consecutive failures that open it
    Millis cooldown{1000};
    Millis max_cooldown{30000};
  };

  CircuitBreaker() = default;
  explicit CircuitBreaker(Settings s) : settings_(s), cooldown_(s.cooldown) {}

  /// May a request go to Redis now? In HalfOpen, true once (the probe) until it reports.
  bool allow(MonoTime now) noexcept {
    switch (state_) {
      case State::Closed:
        return true;
      case State::Open:
        if (now < open_until_) return false;
        state_ = State::HalfOpen;
        probing_ = true;
        return true;
      case State::HalfOpen:
        if (probing_) return false;
        probing_ = true;
        return true;
    }
    return false;
  }

  void success() noexcept {
    failures_ = 0;
    probing_ = false;
    cooldown_ = settings_.cooldown;
    state_ = State::Closed;
  }

  /// A failed request; returns true when this failure opened the breaker.
  bool failure(MonoTime now) noexcept {
    if (state_ == State::HalfOpen) {
      probing_ = false;
      cooldown_ = std::min(cooldown_ * 2, settings_.max_cooldown);
      open(now);
      return true;
    }
    if (state_ == State::Open) return false;
    if (++failures_ < settings_.threshold) return false;
    open(now);
    return true;
  }

  State state() const noexcept { return state_; }
  Millis cooldown() const noexcept { return cooldown_; }

 private:
  void open(MonoTime now) noexcept {
    state_ = State::Open;
    open_until_ = now + cooldown_;
    failures_ = 0;
    ++opened_;
  }

  Settings settings_{};
  State state_ = State::Closed;
  int failures_ = 0;
  bool probing_ = false;
  Millis cooldown_{settings_.cooldown};
  MonoTime open_until_{};
  uint64_t opened_ = 0;

 public:
  /// How many times it has opened (for metrics).
  uint64_t times_opened() const noexcept { return opened_; }
};

}  // namespace hg::resolver
