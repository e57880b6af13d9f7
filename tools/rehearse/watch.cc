// PLACEHOLDER — replaced by the watch command's implementation; must not land as is.
#include <cstdio>

#include "tools/rehearse/commands.h"

namespace hg::rehearse {

int run_watch(int /*argc*/, char** /*argv*/) {
  std::fputs("hourglass-rehearse watch: not built yet\n", stderr);
  return 2;
}

}  // namespace hg::rehearse
