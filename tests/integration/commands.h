// Running the project's command-line tools (and any other program) from integration tests:
// hourglass-ctl against a daemon's control socket, a shell command with a time limit, and a
// plain HTTP GET of the metrics endpoint. Every call is bounded in time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/support/command.h"

namespace hg::integration {

using test::CommandResult;
using test::run_command;

/// `hourglass-ctl --timeout 10 --socket SOCKET ARGS` (ARGS as a shell would split them).
CommandResult ctl(const std::string& socket, const std::string& args);

/// The value of the line "NAME VALUE" in `hourglass-ctl stats` (e.g. `fleet.l2_hits`,
/// `inflight.queries`); -1 when the line is absent or the socket does not answer.
int64_t ctl_stat(const std::string& socket, const std::string& name);

/// GET `path` from 127.0.0.1:port over a plain socket: the whole response, or what came within
/// 5 s.
std::string http_get(uint16_t port, const std::string& path);

/// The value of the sample line `name` (e.g. `hourglass_cache_entries` or
/// `hourglass_queries_total{transport="udp"}`) in a metrics exposition, or -1.
double metric_sample(const std::string& text, const std::string& name);

}  // namespace hg::integration
