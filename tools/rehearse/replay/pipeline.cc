// replay_pipelined: see pipeline.h.
#include "tools/rehearse/replay/pipeline.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace hg::rehearse {

ReadStatus replay_pipelined(TraceReader& reader, ReplayEngine& engine,
                            const std::function<void()>& on_batch) {
  // Batches of this many events go from the reading thread to this one; at most kBatches are
  // filled or being filled at once, so memory stays bounded whichever side is slower.
  constexpr std::size_t kBatchEvents = 4096;
  constexpr std::size_t kBatches = 8;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<EventBatch>> full, empty;
  for (std::size_t i = 0; i < kBatches; ++i)
    empty.push_back(std::make_unique<EventBatch>());
  bool done = false;
  ReadStatus status = ReadStatus::End;
  std::exception_ptr failure;
  EventClassifier& classifier = engine.classifier();

  std::thread reading([&] {
    try {
      TraceEvent ev;
      std::unique_ptr<EventBatch> b;
      for (;;) {
        if (!b) {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !empty.empty(); });
          b = std::move(empty.front());
          empty.pop_front();
          b->clear();
        }
        const ReadStatus st = reader.next(ev);
        if (st == ReadStatus::Event) {
          classifier.classify(ev, *b);
          if (b->events.size() < kBatchEvents) continue;
        }
        {
          std::lock_guard lock(mu);
          full.push_back(std::move(b));
          b = nullptr;  // the next event takes another batch from `empty`
          if (st != ReadStatus::Event) {
            status = st;
            done = true;
          }
        }
        cv.notify_all();
        if (st != ReadStatus::Event) return;
      }
    } catch (...) {
      // Out of memory, most likely: stop, and let the applying thread rethrow it.
      {
        std::lock_guard lock(mu);
        failure = std::current_exception();
        done = true;
      }
      cv.notify_all();
    }
  });

  std::exception_ptr apply_failure;
  for (;;) {
    std::unique_ptr<EventBatch> b;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !full.empty() || done; });
      if (full.empty()) break;
      b = std::move(full.front());
      full.pop_front();
    }
    if (apply_failure == nullptr) {
      try {
        engine.apply(*b);
        if (on_batch) on_batch();
      } catch (...) {
        apply_failure = std::current_exception();  // keep taking batches: the reader must end
      }
    }
    {
      std::lock_guard lock(mu);
      empty.push_back(std::move(b));
    }
    cv.notify_all();
  }
  reading.join();
  if (apply_failure != nullptr) std::rethrow_exception(apply_failure);
  if (failure != nullptr) std::rethrow_exception(failure);
  return status;
}

}  // namespace hg::rehearse
