// hourglass-rehearse replay end to end: the real binary on trace files (a pcap written with
// libpcap here; synth's dnstap and pcap traces once generated), its table, JSON and SVG, and
// its errors: corrupt and truncated traces, bad flags → exit 2 with one line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "tests/rehearse/tool_run.h"
#include "tests/rehearse/trace_test_util.h"

namespace hg::rehearse::test {
namespace {

// hourglass-rehearse replay ARGS; `env`: "NAME=VALUE" for this run only, or empty.
ToolRun rehearse(const std::string& args, const TempDir& dir, const std::string& env = "") {
  return run_rehearse("replay", args, dir, env);
}

constexpr int64_t kT0 = 1'767'225'600LL * 1'000'000'000;

// A capture of a resolver's port 53: `names` with Poisson queries at `rate` per second each,
// every answer with the full TTL (the recorder here is the upstream itself).
void write_trace(const std::string& path, int names, double rate, double seconds, uint32_t ttl) {
  std::vector<Packet> pkts;
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> gap(rate * names);
  std::uniform_int_distribution<int> pick(0, names - 1);
  uint16_t id = 0;
  for (double s = gap(rng); s < seconds; s += gap(rng)) {
    const std::string name = "n" + std::to_string(pick(rng)) + ".example.com";
    const auto t = kT0 + static_cast<int64_t>(s * 1e9);
    ++id;
    const Addr client = v4(192, 0, 2, 10), server = v4(192, 0, 2, 53);
    pkts.push_back(
        {t, link_frame(DLT_EN10MB, ip_packet(client, server, 17,
                                             udp(40000, 53, dns_message(id, name, false))))});
    pkts.push_back(
        {t + 1'000'000,
         link_frame(DLT_EN10MB, ip_packet(server, client, 17,
                                          udp(53, 40000, dns_message(id, name, true, ttl))))});
  }
  write_pcap(path, DLT_EN10MB, pkts);
}

TEST(ReplayCli, PcapTraceTableJsonAndPlot) {
  TempDir dir;
  const std::string trace = dir.file("t.pcap");
  write_trace(trace, 5, 2, 3600, 3600);
  const ToolRun r =
      rehearse(trace + " --schedule example.com=60@+30m --prefetch off --json " +
                   dir.file("r.json") + " --plot " + dir.file("r.svg") + " --bucket 1m",
               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("upstream queries"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("n0.example.com."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibration: none"), std::string::npos) << r.out;
  const Bytes jb = read_file(dir.file("r.json"));
  const std::string json(jb.begin(), jb.end());
  for (const char* key :
       {"\"total\"", "\"queries\"", "\"upstream_before\"", "\"upstream_after\"",
        "\"hit_ratio_before\"", "\"hit_ratio_after\"", "\"peak_upstream_qps_before\"",
        "\"peak_upstream_qps_after\"", "\"names\"", "\"name\": \"n0.example.com.\"",
        "\"qtype\": \"A\"", "\"switch_times\": [\"2026-01-01T00:30:0"})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  // Before: 5 names, TTL 3600 over one hour → one upstream query each.
  EXPECT_NE(json.find("\"upstream_before\": 5,"), std::string::npos) << json.substr(0, 2000);
  const Bytes svg = read_file(dir.file("r.svg"));
  const std::string s(svg.begin(), svg.end());
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  // The switch line is labelled with its zone and TTL.
  EXPECT_NE(s.find("example.com. TTL ≤ 60 s from 2026-01-01T00:30:0"), std::string::npos) << s;
  EXPECT_NE(s.find("upstream queries per second (60 s buckets)"), std::string::npos);
  EXPECT_NE(s.find("time since the trace's start (min)"), std::string::npos);
}

// A schedule that matches nothing, or switches after the trace, is a warning and exit 3 (not
// a silent "1.00x"); the settled window and the --from/--to window are in the JSON.
TEST(ReplayCli, ScheduleThatMatchesNothingExitsThree) {
  TempDir dir;
  const std::string trace = dir.file("t.pcap");
  write_trace(trace, 5, 2, 3600, 300);
  ToolRun r = rehearse(trace + " --schedule exmaple.com=60@+30m --prefetch off", dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("warning: --schedule exmaple.com.=60: no question or record"),
            std::string::npos)
      << r.err;
  r = rehearse(trace + " --schedule example.com=60@+2h --prefetch off", dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("after the trace ends"), std::string::npos) << r.err;
  // Every name is hot and was last fetched (TTL 300) just after +15m, so the old copies run out
  // just after the +20m switch: the settled window starts there.
  r = rehearse(trace + " --schedule example.com=60@+20m --prefetch off --from +40m --to +50m " +
                   "--json " + dir.file("w.json"),
               dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("settled (after the last switch, old TTLs run out), "
                       "2026-01-01T00:20:0"),
            std::string::npos)
      << r.out;
  const Bytes jb = read_file(dir.file("w.json"));
  const std::string json(jb.begin(), jb.end());
  EXPECT_NE(json.find("\"window\": {\"from\": \"2026-01-01T00:40:00"), std::string::npos) << json;
  EXPECT_NE(json.find("\"settled\": {\"from\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"warnings\": []"), std::string::npos) << json;
}

// synth's recorder is a plain TTL cache with coalescing and its FORWARDER_* in the dnstap:
// the replay's before run (prefetch off, RTT measured) must reproduce its upstream count.
TEST(ReplayCli, SynthDnstapCalibratesAndPcapReplays) {
  TempDir dir;
  const std::string synth = std::string(HG_REHEARSE_BIN) +
                            " synth --names 300 --qps 50 --duration 30m --ttl 30-3600 --seed 3";
  ASSERT_EQ(std::system((synth + " -o " + dir.file("s.dnstap") + " >/dev/null").c_str()), 0);
  ASSERT_EQ(
      std::system((synth + " --format pcap -o " + dir.file("s.pcap") + " >/dev/null").c_str()), 0);
  ToolRun r =
      rehearse(dir.file("s.dnstap") + " --prefetch off --schedule synth.example=60@+10m --json " +
                   dir.file("s.json"),
               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const Bytes jb = read_file(dir.file("s.json"));
  const std::string json(jb.begin(), jb.end());
  const auto at = json.find("\"error_percent\": ");
  ASSERT_NE(at, std::string::npos) << json.substr(0, 1500);
  const double err = std::stod(json.substr(at + 17, 20));
  EXPECT_LT(std::abs(err), 1.0) << r.out;
  EXPECT_NE(r.out.find("median of"), std::string::npos) << r.out;
  // The same traffic as a pcap: no calibration, the same before count within warm-start noise.
  const ToolRun p =
      rehearse(dir.file("s.pcap") + " --prefetch off --json " + dir.file("p.json"), dir);
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("calibration: none"), std::string::npos) << p.out;
  const Bytes pb = read_file(dir.file("p.json"));
  const std::string pj(pb.begin(), pb.end());
  EXPECT_NE(pj.find("\"queries\": "), std::string::npos);
  EXPECT_NE(pj.find("\"calibration\": null"), std::string::npos);
}

// replay restarts itself once with glibc's huge-page tunable (added to any GLIBC_TUNABLES the
// caller set); HG_REHEARSE_HUGEPAGES=0 stays in the first process. Neither may change a byte
// of the result.
TEST(ReplayCli, TheHugePageRestartChangesNothingInTheResult) {
  TempDir dir;
  write_trace(dir.file("t.pcap"), 20, 0.5, 600, 60);
  const std::string args = dir.file("t.pcap") + " --prefetch off --schedule example.com=10 --json ";
  const ToolRun plain = rehearse(args + dir.file("default.json"), dir);
  ASSERT_EQ(plain.status, 0) << plain.err;
  for (const char* env :
       {"HG_REHEARSE_HUGEPAGES=0", "GLIBC_TUNABLES=glibc.malloc.tcache_count=7"}) {
    const std::string json = dir.file("other.json");
    const ToolRun r = rehearse(args + json, dir, env);
    ASSERT_EQ(r.status, 0) << env << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << env;
    EXPECT_EQ(read_file(json), read_file(dir.file("default.json"))) << env;
  }
}

TEST(ReplayCli, TruncatedAndCorruptTracesExitTwoWithTheOffset) {
  TempDir dir;
  const std::string good = dir.file("t.pcap");
  write_trace(good, 2, 1, 60, 60);
  Bytes b = read_file(good);
  ASSERT_GT(b.size(), 200u);
  const std::string cut = dir.file("cut.pcap");
  write_file(cut, Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() - 7)));
  ToolRun r = rehearse(cut, dir);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(cut + ": offset "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  const std::string junk = dir.file("junk.bin");
  write_file(junk, Bytes(100, 0x5a));
  r = rehearse(junk, dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(junk + ": offset "), std::string::npos) << r.err;

  r = rehearse(dir.file("missing.pcap"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("missing.pcap"), std::string::npos) << r.err;
}

// The fuzzer's pcapng record dated 53,761,720,551 s (past what int64 nanoseconds hold): one
// line naming the file, the record's offset and the time, exit 2; with --skip-bad the record
// is counted and the rest replayed.
TEST(ReplayCli, TimestampOutOfRangeExitsTwoOrIsSkipped) {
  TempDir dir;
  const std::string found =
      std::string(HG_SOURCE_DIR) + "/tests/fuzz/corpus/trace/found-pcapng-time-overflow";
  ToolRun r = rehearse(found, dir);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(found + ": offset 48: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("timestamp 53761720551."), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  // A good trace followed by the bad file: with --skip-bad the good one is replayed whole.
  const std::string good = dir.file("t.pcap");
  write_trace(good, 2, 1, 60, 60);
  r = rehearse("--skip-bad --json " + good + " " + found, dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("skipped for a timestamp out of range"), std::string::npos)
      << r.out << r.err;
}

TEST(ReplayCli, BadFlagsExitTwoWithOneLineNamingFlagAndValue) {
  TempDir dir;
  const std::string trace = dir.file("t.pcap");
  write_trace(trace, 1, 1, 10, 60);
  for (const char* args : {"--schedule example.com", "--schedule example.com=60@tomorrow",
                           "--prefetch maybe", "--bucket 0s", "--bucket 1.5s", "--cache-size 12X",
                           "--upstream-rtt -3", "--ttl-cap a.b=60@+1h", "--top many"}) {
    const ToolRun r = rehearse(trace + " " + args, dir);
    EXPECT_EQ(r.status, 2) << args;
    const std::string flag = std::string(args).substr(0, std::string(args).find(' '));
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  const ToolRun none = rehearse("", dir);
  EXPECT_EQ(none.status, 2);
  const ToolRun unknown = rehearse(trace + " --frobnicate 1", dir);
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("--frobnicate"), std::string::npos);
}

}  // namespace
}  // namespace hg::rehearse::test
