// PLACEHOLDER — replaced by the synth command's implementation; must not land as is.
#include <cstdio>

#include "tools/rehearse/commands.h"

namespace hg::rehearse {

int run_synth(int /*argc*/, char** /*argv*/) {
  std::fputs("hourglass-rehearse synth: not built yet\n", stderr);
  return 2;
}

}  // namespace hg::rehearse
