// check(): how a fuzz target states a property of the code it feeds. A violated property
// aborts with a line naming the target and the property, so libFuzzer keeps the input as a
// crash (and the corpus replay in every build fails on it).
#pragma once

#include <errno.h>  // program_invocation_short_name (GNU)

#include <cstdio>
#include <cstdlib>

namespace hg::fuzz {

/// Aborts unless `ok`; `what` names the property.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: property violated: %s\n", program_invocation_short_name, what);
    std::abort();
  }
}

}  // namespace hg::fuzz
