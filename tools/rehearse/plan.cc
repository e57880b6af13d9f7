// PLACEHOLDER — replaced by the plan command's implementation; must not land as is.
#include <cstdio>

#include "tools/rehearse/commands.h"

namespace hg::rehearse {

int run_plan(int /*argc*/, char** /*argv*/) {
  std::fputs("hourglass-rehearse plan: not built yet\n", stderr);
  return 2;
}

}  // namespace hg::rehearse
