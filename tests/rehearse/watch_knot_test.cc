// hourglass-rehearse watch against real servers on loopback (label: integration): knotd is
// the authoritative server whose answer changes during the run, two hourglassd instances in
// front of it are the resolvers being watched.
#include <sys/wait.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "tests/integration/daemon.h"
#include "tests/rehearse/knot.h"

namespace hg::rehearse_test {
namespace {

std::string watch_zone(uint32_t serial, const char* addr) {
  return "$ORIGIN watch.test.\n"
         "@ 3600 IN SOA ns.watch.test. admin.watch.test. " +
         std::to_string(serial) +
         " 3600 600 86400 60\n"
         "@ 3600 IN NS ns\n"
         "ns 3600 IN A 127.0.0.1\n"
         "www 2 IN A " +
         addr + "\n";
}

std::string resolver_flag(uint16_t port) {
  return " --resolver 127.0.0.1:" + std::to_string(port);
}

TEST(WatchKnot, BothResolversFlipAfterTheChangeExitZero) {
  auto knot = Knot::start({{"watch.test", watch_zone(1, "192.0.2.1")}});
  ASSERT_NE(knot, nullptr);
  const std::string up = "--upstream=" + knot->address();
  auto d1 = integration::Daemon::start({up});
  auto d2 = integration::Daemon::start({up});
  ASSERT_TRUE(d1->ready()) << d1->output();
  ASSERT_TRUE(d2->ready()) << d2->output();

  const std::string cmd = "timeout -k 5 90 " + rehearse_path() +
                          " watch www.watch.test --old A=192.0.2.1 --new A=198.51.100.7"
                          " --interval 1s --duration 60s" +
                          resolver_flag(d1->port()) + resolver_flag(d2->port()) + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char line[1024];
  int serving_old = 0;
  bool changed = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    out += line;
    if (std::string(line).find("serves old: 192.0.2.1") != std::string::npos) ++serving_old;
    if (serving_old == 2 && !changed) {
      // Both resolvers have the old answer cached: now switch the record.
      changed = knot->replace_zone({"watch.test", watch_zone(2, "198.51.100.7")}, 2);
      ASSERT_TRUE(changed);
    }
  }
  const int st = pclose(f);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << out;
  EXPECT_TRUE(changed) << out;
  std::size_t flips = 0;
  for (std::size_t i = out.find("flipped old → new: 198.51.100.7 (TTL "); i != std::string::npos;
       i = out.find("flipped old → new: 198.51.100.7 (TTL ", i + 1)) {
    ++flips;
  }
  EXPECT_EQ(flips, 2u) << out;
  EXPECT_NE(out.find("2 of 2 resolvers serve the new answer"), std::string::npos) << out;
}

TEST(WatchKnot, NoFlipWithinTheDurationExitOne) {
  auto knot = Knot::start({{"watch.test", watch_zone(1, "192.0.2.1")}});
  ASSERT_NE(knot, nullptr);
  SilentPort silent;
  // knotd answers RD=1 queries for its own zone too, so it can be watched directly.
  auto r = rehearse(
      "watch www.watch.test --old A=192.0.2.1 --new A=198.51.100.7"
      " --interval 1s --duration 3s" +
      resolver_flag(knot->port()) + resolver_flag(silent.port()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(knot->address() + "  serves old: 192.0.2.1 (TTL 2)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("serves no answer: no answer (timeout)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0 of 2 resolvers serve the new answer"), std::string::npos) << r.output;
}

TEST(WatchUsage, BoundsAreEnforced) {
  struct Case {
    const char* args;
    const char* says;
  } cases[] = {
      {"watch www.example.test --old A=192.0.2.1 --interval 100ms --resolver 127.0.0.1",
       "--interval '100ms': expected 1s to 1h"},
      {"watch www.example.test --old A=192.0.2.1 --duration 3d --resolver 127.0.0.1",
       "--duration '3d': expected"},
      {"watch www.example.test --old A=300.1.1.1 --resolver 127.0.0.1", "--old 'A=300.1.1.1'"},
      {"watch www.example.test --old A=192.0.2.1 --new AAAA=2001:db8::1 --resolver 127.0.0.1",
       "the same type"},
      {"watch www.example.test --resolver 127.0.0.1", "--old is required"},
  };
  for (const auto& c : cases) {
    auto r = rehearse(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace hg::rehearse_test
