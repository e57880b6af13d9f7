// The event-loop adapter hiredis's async API asks for: hiredis says when it wants to hear
// that its socket is readable or writable (addRead/delRead/addWrite/delWrite) and when the
// context goes away (cleanup); these hooks turn that into a watch on our own EventLoop, and
// readiness into redisAsyncHandleRead/Write. No thread and no library event loop of its own:
// a Redis connection lives on the worker loop that uses it.
//
// hiredis 0.14 has no command timeouts; RedisConn (redis_conn.h) keeps its own timers.
#pragma once

#include "resolver/net/event_loop.h"

struct redisAsyncContext;

namespace hg::resolver {

/// Attaches `ac` (freshly created by redisAsyncConnect*) to `loop`. The watch is removed when
/// hiredis frees the context (its cleanup hook). Returns false when `ac` already has an
/// adapter or its socket could not be watched.
bool redis_attach(EventLoop& loop, redisAsyncContext* ac);

}  // namespace hg::resolver
