// The linger report's three renderings: the terminal report, JSON (schema in
// docs/rehearsal.md) and an SVG timeline. Pure functions of the computed plans.
#pragma once

#include <string>
#include <vector>

#include "tools/rehearse/plan/model.h"

namespace hg::rehearse {

struct ReportHeader {
  PlanInput input;
  std::string profile_origin;
};

std::string render_text(const ReportHeader& h, const std::vector<NamePlan>& plans);
std::string render_json(const ReportHeader& h, const std::vector<NamePlan>& plans);
/// One panel per planned name: a bar per layer from now to its gone-by time (an arrow for no
/// bound), the lower-by moment and the cut-over marked. The time axis is linear from now to
/// the cut-over and logarithmic after it, so minutes and days both stay readable.
std::string render_svg(const ReportHeader& h, const std::vector<NamePlan>& plans);

}  // namespace hg::rehearse
