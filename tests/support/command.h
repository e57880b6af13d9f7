// Running a program from a test: `sh -c` under `timeout`, output collected, exit status kept.
// Every test binary that starts real programs (dig, kdig, hourglass-ctl, redis-cli,
// hourglass-rehearse) goes through this one function.
#pragma once

#include <string>
#include <string_view>

namespace hg::test {

struct CommandResult {
  std::string output;  ///< stdout (and stderr, unless discarded)
  int exit_code = -1;  ///< the exit status; 128 + N when killed by signal N; -1: never ran
  bool contains(std::string_view s) const { return output.find(s) != std::string::npos; }
};

enum class Stderr { Merge, Discard };

/// `timeout -k 5 SECONDS CMD` through the shell, with stderr merged into the output (or
/// discarded). CMD is shell text: quote what must not be split.
CommandResult run_command(const std::string& cmd, int seconds = 30, Stderr err = Stderr::Merge);

/// `s` as one word of shell text: in single quotes, each ' written as '\''.
std::string shell_quote(const std::string& s);

}  // namespace hg::test
