// Running the real hourglass-rehearse from its end-to-end tests: one subcommand with its
// arguments, stdout and stderr kept apart, the exit status.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/rehearse/trace_test_util.h"

#ifndef HG_REHEARSE_BIN
#error "HG_REHEARSE_BIN (path of hourglass-rehearse) must be defined by the build"
#endif

namespace hg::rehearse::test {

struct ToolRun {
  int status = -1;
  std::string out, err;
};

/// Runs `hourglass-rehearse SUBCOMMAND ARGS` (ARGS a shell-quoted string) with its output
/// in files of `dir`. `env`: "NAME=VALUE" set for this run only, or empty.
inline ToolRun run_rehearse(const std::string& subcommand, const std::string& args,
                            const TempDir& dir, const std::string& env = "") {
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(HG_REHEARSE_BIN) +
                          " " + subcommand + " " + args + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  ToolRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  const Bytes o = read_file(out), e = read_file(err);
  r.out.assign(o.begin(), o.end());
  r.err.assign(e.begin(), e.end());
  return r;
}

}  // namespace hg::rehearse::test
