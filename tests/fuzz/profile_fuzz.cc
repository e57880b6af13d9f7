// Fuzz target: hourglass-rehearse plan's profile parser (TOML from --profile). Any input must
// give a profile or a one-line error, never a crash or an exception; a parsed profile is also
// run through the timeline arithmetic, whose layer figures come from it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tools/rehearse/plan/model.h"
#include "tools/rehearse/plan/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hg::rehearse;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = parse_profile(text, "fuzz.toml");
  if (!p) {
    if (p.error().find('\n') != std::string::npos) std::abort();  // errors are one line
    return 0;
  }
  NamePlan plan;
  plan.name = "www.example.test.";
  Hop h;
  h.owner = plan.name;
  h.type = "CNAME";
  h.ttl = 3600;
  plan.hops.push_back(h);
  const PlanInput in{SysSeconds{std::chrono::seconds{1'796'292'000}}, 60,
                     SysSeconds{std::chrono::seconds{1'796'000'000}}};
  compute_timeline(plan, in, p.value());
  if (plan.layers.size() != p->layers.size()) std::abort();
  return 0;
}
