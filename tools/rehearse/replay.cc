// PLACEHOLDER — replaced by the replay command's implementation; must not land as is.
#include <cstdio>

#include "tools/rehearse/commands.h"

namespace hg::rehearse {

int run_replay(int /*argc*/, char** /*argv*/) {
  std::fputs("hourglass-rehearse replay: not built yet\n", stderr);
  return 2;
}

}  // namespace hg::rehearse
