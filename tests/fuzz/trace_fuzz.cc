// libFuzzer target for the trace readers of hourglass-rehearse: the input is a whole trace
// file (Frame Streams dnstap, pcap or pcapng, chosen by its magic bytes as open_trace does),
// opened in memory (fmemopen; libpcap through pcap_fopen_offline) and read to the end twice,
// without and with skip_bad.
//
// Properties checked, each a crash (abort) when violated:
//  1. Reading ends (End or Bad) within a bound of events proportional to the input size.
//  2. Every event carries a non-empty message inside a sane size, a role and a side.
//  3. Bad comes with an error whose offset lies within the file and whose line starts with
//     "NAME: offset N: ", and stays Bad.
//  4. skip_bad never yields fewer events than reading strictly up to its Bad.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "tools/rehearse/trace/trace.h"

namespace {

using namespace hg::rehearse;

using hg::fuzz::check;

uint64_t read_through(std::span<const uint8_t> in, bool skip_bad) {
  TraceOptions opt;
  opt.skip_bad = skip_bad;
  TraceError err;
  auto r = open_trace_memory(in, "fuzz", opt, err);
  if (!r) {
    check(err.offset <= in.size(), "open error offset beyond the input");
    return 0;
  }
  // A TCP segment or a reassembled fragment can yield a few messages per input byte at most.
  const uint64_t bound = 64 + in.size() * 2;
  uint64_t events = 0;
  TraceEvent ev;
  for (;;) {
    const ReadStatus st = r->next(ev);
    if (st == ReadStatus::End) break;
    if (st == ReadStatus::Bad) {
      check(r->error().offset <= in.size(), "Bad offset beyond the input");
      check(r->error().to_string().rfind("fuzz: offset ", 0) == 0, "error line format");
      check(r->next(ev) == ReadStatus::Bad, "Bad is not sticky");
      break;
    }
    ++events;
    check(events <= bound, "more events than the input can hold");
    check(!ev.message.empty() && ev.message.size() <= 65535, "event message size");
    check(ev.role == Role::Query || ev.role == Role::Response, "role");
    check(ev.side == Side::Client || ev.side == Side::Upstream, "side");
    check(ev.family == 0 || ev.family == 4 || ev.family == 6, "family");
    volatile uint8_t sink = ev.message.front();  // the message must be readable
    sink = ev.message.back();
    (void)sink;
  }
  (void)r->describe();
  (void)r->skipped();
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> in(data, size);
  const uint64_t strict = read_through(in, false);
  const uint64_t skipping = read_through(in, true);
  check(skipping >= strict, "skip_bad read fewer events");
  return 0;
}
