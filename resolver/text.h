// The text helpers live in base/text.h (the endpoint and resolv.conf parsers below the
// resolver use them too); the resolver's rooms keep including this name for them.
#pragma once

#include "base/text.h"

namespace hg::resolver {
namespace text = base::text;
}  // namespace hg::resolver
