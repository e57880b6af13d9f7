// The replay's figure: upstream queries per second over trace time, before vs after, with the
// schedule's switch times marked. A self-contained SVG (no scripts, no external fonts).
#pragma once

#include <string>

#include "tools/rehearse/replay/summary.h"

namespace hg::rehearse {

std::string render_svg(const ReportInput& in);

}  // namespace hg::rehearse
