// Running the project's command-line tools (and any other program) from integration tests:
// hourglass-ctl against a daemon's control socket, a shell command with a time limit, and a
// plain HTTP GET of the metrics endpoint. Every call is bounded in time.
#pragma once

#include <cstdint>
#include <map>
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
/// The same from the text of one `hourglass-ctl stats` run, for tests that read several
/// counters of one moment.
int64_t stat_in(const std::string& stats_text, const std::string& name);

/// The key=value fields of the line for `server` in `hourglass-ctl upstreams` (e.g.
/// "edns" -> "yes", "timeouts" -> "3"); empty when the server has no line.
std::map<std::string, std::string> upstream_line(const std::string& text,
                                                 const std::string& server);

/// GET `path` from 127.0.0.1:port over a plain socket sent from `from` (an address in
/// 127.0.0.0/8): the whole response, or what came within 5 s ("" when the connection was
/// refused, or closed or reset without a response).
std::string http_get(uint16_t port, const std::string& path, const char* from = "127.0.0.1");

/// The value of the sample line `name` (e.g. `hourglass_cache_entries` or
/// `hourglass_queries_total{transport="udp"}`) in a metrics exposition, or -1.
double metric_sample(const std::string& text, const std::string& name);

}  // namespace hg::integration
