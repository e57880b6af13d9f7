// eventually(): waiting by polling with a bound, never with a fixed sleep. A test that waits
// for something the daemon does in its own time (a connection made, a message applied, a
// counter moved) asks again every `step` until `done()` holds, and gives up after `bound`:
// as fast as the machine allows on a quiet machine, still correct on a loaded one.
//
//   ASSERT_TRUE(eventually([&] { return stat(socket, "fleet.connected_workers") >= 2; }));
#pragma once

#include <chrono>
#include <thread>

namespace hg::test {

/// Calls `done` every `step` until it returns true (then true) or `bound` has passed (then
/// false, after one last call that started at or after the bound).
template <typename F>
bool eventually(F&& done, std::chrono::milliseconds bound = std::chrono::seconds{10},
                std::chrono::milliseconds step = std::chrono::milliseconds{20}) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const bool late = std::chrono::steady_clock::now() >= deadline;
    if (done()) return true;
    if (late) return false;
    std::this_thread::sleep_for(step);
  }
}

}  // namespace hg::test
