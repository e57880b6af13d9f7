// replay_pipelined: a trace through a ReplayEngine on two threads, the classifier
// (classifier.h) on a reading thread and the engine's apply on the caller's.
#pragma once

#include <functional>

#include "tools/rehearse/replay/engine.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {

/// Reads `reader` to its end into `engine` on two threads: a second thread reads and
/// classifies (the first stage), this one applies (the second, with both caches). The figures
/// are the same as add() for every event gives. Returns End, or Bad when the reader stopped
/// on an error (its error() says where); the events before it have been applied either way.
/// `on_batch` runs on this thread after every batch (a progress line).
ReadStatus replay_pipelined(TraceReader& reader, ReplayEngine& engine,
                            const std::function<void()>& on_batch = {});

}  // namespace hg::rehearse
