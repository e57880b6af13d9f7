#include "tests/support/command.h"

#include <sys/wait.h>

#include <cstdio>

namespace hg::test {

CommandResult run_command(const std::string& cmd, int seconds, Stderr err) {
  CommandResult r;
  const std::string line = "timeout -k 5 " + std::to_string(seconds) + " " + cmd +
                           (err == Stderr::Merge ? " 2>&1" : " 2>/dev/null");
  FILE* p = ::popen(line.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace hg::test
