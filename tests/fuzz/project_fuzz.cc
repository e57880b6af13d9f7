// libFuzzer target for hourglass-rehearse project: the input is a whole trace file (as
// trace_fuzz), whose events go through ProjectInput::add — which parses each DNS message, and
// reads TTLs and a negative answer's SOA MINIMUM from the records — and then the projection.
//
// Properties checked, each a crash (abort) when violated:
//  1. Every projected figure is finite and not negative, and lo <= mid <= hi.
//  2. The received count equals the queries added.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "tests/fuzz/fuzz_check.h"
#include "tools/rehearse/project/project.h"
#include "tools/rehearse/trace/trace.h"

namespace {

using namespace hg::rehearse;

using hg::fuzz::check;

void check_rate(const Rate& r) {
  check(std::isfinite(r.mid) && std::isfinite(r.lo) && std::isfinite(r.hi), "finite");
  check(r.lo >= 0 && r.lo <= r.mid + 1e-9 && r.mid <= r.hi + 1e-9, "lo <= mid <= hi");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> in(data, size);
  TraceOptions opt;
  opt.skip_bad = true;
  TraceError err;
  auto r = open_trace_memory(in, "fuzz", opt, err);
  if (!r) return 0;
  ProjectInput pin;
  TraceEvent ev;
  uint64_t guard = 0;
  while (r->next(ev) == ReadStatus::Event && ++guard < 1'000'000)
    pin.add(ev);
  if (pin.queries == 0) return 0;
  const ProjectResult res = project(pin, {300, 60, 1}, 300);
  check(res.observed == pin.queries, "received = queries added");
  for (const Rate& t : res.totals)
    check_rate(t);
  for (const NameProjection& n : res.names)
    for (const Rate& a : n.at)
      check_rate(a);
  (void)format_project_table(res, pin, 0.4, 5);
  (void)format_project_json(res, pin, 0.4);
  return 0;
}
