// Hosts files at blocklist scale against the real hourglassd (docs/local-names.md, "Hosts
// files"): a re-read is built beside the table in force and swapped in whole, so a file that
// cannot be read (too large, gone) leaves the old answers, and queries asked while the file
// is rewritten are all answered, each correctly from the old or the new file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/eventually.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kLimit = std::size_t{64} << 20;  // kMaxHostsFileBytes

std::vector<std::string> ask_a(uint16_t port, const std::string& name) {
  auto a = udp_query(port, build_query({.name = name}), Millis{2000});
  if (!a) return {"(no answer)"};
  return a_records(*a);
}

class HostsReload : public DaemonTest {};

TEST_F(HostsReload, AFileOverTheLimitIsRefusedWithOneLineAndTheOldTableStays) {
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.99")}));
  TempFile hosts("192.0.2.20 kept.example\n");
  start({"--hosts-file", hosts.path()});
  EXPECT_EQ(ask_a(port(), "kept.example"), std::vector<std::string>{"192.0.2.20"});

  // One byte over 64 MiB, put in place by rename: refused, the old table answers.
  const std::string big = hosts.path() + ".big";
  std::ofstream(big) << "192.0.2.21 big.example\n";
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kLimit) + 1), 0);
  ASSERT_EQ(std::rename(big.c_str(), hosts.path().c_str()), 0);
  ASSERT_TRUE(daemon_->wait_for_output(
      "is larger than 67108864 bytes; not read; keeping what it said before", Millis{20000}))
      << daemon_->output();
  EXPECT_EQ(daemon_->lines_with("is larger than 67108864 bytes").size(), 1u);
  EXPECT_EQ(ask_a(port(), "kept.example"), std::vector<std::string>{"192.0.2.20"});
  EXPECT_EQ(ask_a(port(), "big.example"), std::vector<std::string>{"192.0.2.99"});  // upstream

  // Exactly 64 MiB is read: the one good line is served, the rest (NUL bytes, one 64 MiB
  // line) skipped with one line saying so.
  std::ofstream(big) << "192.0.2.22 limit.example\n";
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kLimit)), 0);
  ASSERT_EQ(std::rename(big.c_str(), hosts.path().c_str()), 0);
  ASSERT_TRUE(test::eventually(
      [&] { return ask_a(port(), "limit.example") == std::vector<std::string>{"192.0.2.22"}; },
      std::chrono::seconds{20}))
      << daemon_->output();
  EXPECT_EQ(
      daemon_->lines_with(":2: a line of 67108839 bytes (more than 1048576); line skipped").size(),
      1u)
      << daemon_->output();
  EXPECT_EQ(ask_a(port(), "kept.example"), std::vector<std::string>{"192.0.2.99"});
}

// A blocklist-sized file in two versions: `blkN.example` is 10.V.x.y in version V, and
// stable.example is the same in both. A client asks at a fixed rate (one query at a time,
// every 5 ms) while the file is replaced, alternately, `kRewrites` times.
std::string version(int v, int names) {
  std::string text = "192.0.2.30 stable.example\n192.0.2." + std::to_string(40 + v) + " marker" +
                     std::to_string(v) + ".example\n";
  for (int i = 0; i < names; ++i)
    text += "10." + std::to_string(v) + "." + std::to_string(i / 250) + "." +
            std::to_string(i % 250) + " blk" + std::to_string(i) + ".example\n";
  return text;
}

TEST_F(HostsReload, QueriesDuringRewritesAreAllAnsweredFromTheOldOrTheNewFile) {
  // Big enough that a table build takes a while (tens of ms here, far more under ASan), small
  // enough that ASan's build, whose builder thread runs at nice 19 beside the CI's other
  // work, keeps well inside the test's time.
  constexpr int kNames = 20000;
  constexpr int kRewrites = 4;
  upstream_.set_default(FakeReply::records({FakeRecord::a("", 60, "192.0.2.99")}));
  const std::string v1 = version(1, kNames), v2 = version(2, kNames);
  TempFile hosts(v1);
  start({"--hosts-file", hosts.path()});
  ASSERT_EQ(ask_a(port(), "marker1.example"), std::vector<std::string>{"192.0.2.41"});

  std::atomic<bool> done{false};
  struct Bad {
    std::string name;
    std::vector<std::string> got;
  };
  std::vector<Bad> bad;
  std::vector<double> delays;
  std::thread client([&] {
    const auto until = Clock::now() + std::chrono::seconds(60);  // the bound
    // Until the rewrites are done, and at least 150 queries (a fast build is over quickly).
    for (int i = 0; (!done.load() || i < 150) && Clock::now() < until; ++i) {
      const int k = (i * 7919) % kNames;
      std::string name;
      std::vector<std::vector<std::string>> ok;
      switch (i % 3) {
        case 0:
          name = "stable.example";
          ok = {{"192.0.2.30"}};
          break;
        case 1:
          name = "blk" + std::to_string(k) + ".example";
          for (int v : {1, 2})
            ok.push_back({"10." + std::to_string(v) + "." + std::to_string(k / 250) + "." +
                          std::to_string(k % 250)});
          break;
        default:
          name = "elsewhere" + std::to_string(i) + ".example";
          ok = {{"192.0.2.99"}};
      }
      const auto t0 = Clock::now();
      const auto got = ask_a(port(), name);
      delays.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (std::find(ok.begin(), ok.end(), got) == ok.end()) bad.push_back({name, got});
      std::this_thread::sleep_until(t0 + Millis{5});
    }
  });
  for (int r = 0; r < kRewrites; ++r) {
    const int v = r % 2 == 0 ? 2 : 1;
    hosts.rewrite(v == 2 ? v2 : v1);
    const std::string marker = "marker" + std::to_string(v) + ".example";
    const std::string want = "192.0.2." + std::to_string(40 + v);
    EXPECT_TRUE(
        test::eventually([&] { return ask_a(port(), marker) == std::vector<std::string>{want}; },
                         std::chrono::seconds{20}))
        << "rewrite " << r << "\n"
        << daemon_->output();
  }
  done = true;
  client.join();
  for (const Bad& b : bad) {
    std::string got;
    for (const auto& g : b.got)
      got += g + " ";
    ADD_FAILURE() << b.name << " answered " << got;
  }
  ASSERT_GT(delays.size(), 100u);
  std::sort(delays.begin(), delays.end());
  std::printf("%zu queries during %d rewrites of %d names: p99 %.2f ms, max %.2f ms\n",
              delays.size(), kRewrites, kNames, delays[delays.size() * 99 / 100], delays.back());
  EXPECT_GE(daemon_->lines_with("hosts file changed: routing now").size(), 1u);
}

}  // namespace
}  // namespace hg::integration
