// Checked<T> lives in base/checked.h (tools that must not link the daemon use it too); the
// resolver's rooms keep including this name for it.
#pragma once

#include "base/checked.h"

namespace hg::resolver {
using base::Checked;
}  // namespace hg::resolver
