// Smaller points of the same security review, each against the real hourglassd: ttl-cap 0
// (not cached, and clients get TTL 0 for the zone rather than the upstream's TTL); the dnstap
// file's mode whatever the umask; SIGHUP naming the setting that is wrong (a bad shadow-ttl
// is not a dnstap problem; a nameserver file of invalid lines says so); --check-config
// printing the warnings start-up prints.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/daemon_fixture.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/temp_dir.h"

namespace hg::integration {
namespace {

using test::FakeRecord;
using test::FakeReply;

class Hardening : public DaemonTest {
 protected:
  void TearDown() override { daemon_.reset(); }
  std::optional<Answer> ask(const std::string& name) {
    return udp_query(port(), build_query(Query{.name = name}), Millis{6000});
  }
  test::TempDir dir_{"hg-harden"};
};

// ttl-cap ZONE=0: "do not cache this zone". Every query goes upstream, and the client is told
// TTL 0 — the cap bounds what clients are given, as any other cap does — instead of the
// upstream's 300 s, which a downstream cache would keep.
TEST_F(Hardening, TtlCapZeroIsNotCachedAndReachesClientsAsTtlZero) {
  upstream_.on("www.zero.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.71")}));
  upstream_.on("www.kept.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.72")}));
  start({"--ttl-cap", "zero.test=0"});
  for (int i = 1; i <= 2; ++i) {
    const auto a = ask("www.zero.test");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rcode(), wire::RCode::NoError);
    EXPECT_EQ(a->ttls(), std::vector<uint32_t>{0}) << a->text();
    EXPECT_EQ(upstream_.queries("www.zero.test"), static_cast<std::size_t>(i)) << "it was cached";
  }
  const DigResult d = dig(port(), "www.zero.test A");
  EXPECT_EQ(d.ttls(), std::vector<uint32_t>{0}) << d.output;
  EXPECT_TRUE(d.contains("192.0.2.71")) << d.output;
  EXPECT_EQ(upstream_.queries("www.zero.test"), 3u);
  // Another zone keeps its TTL and is cached.
  ASSERT_TRUE(ask("www.kept.test"));
  const auto kept = ask("www.kept.test");
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->ttls().size(), 1u);
  EXPECT_GE(kept->ttls()[0], 299u);
  EXPECT_EQ(upstream_.queries("www.kept.test"), 1u);
}

// A negative answer is about the name asked: its SOA (owned by the apex above the capped
// zone) is given with TTL 0 too.
TEST_F(Hardening, TtlCapZeroAppliesToANegativeAnswerPassedThrough) {
  upstream_.on("nx.sub.neg.test", FakeReply::nxdomain(FakeRecord::soa("neg.test", 900, 600)));
  start({"--ttl-cap", "sub.neg.test=0"});
  const auto a = ask("nx.sub.neg.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::NXDomain) << a->text();
  EXPECT_EQ(a->ttls(wire::Section::Authority), std::vector<uint32_t>{0}) << a->text();
  ASSERT_TRUE(ask("nx.sub.neg.test"));
  EXPECT_EQ(upstream_.queries("nx.sub.neg.test"), 2u);
}

// Set at run time, a cap of 0 removes what is cached at once: it is not left behind to be
// served stale when the upstream fails.
TEST_F(Hardening, TtlCapZeroAtRunTimeDropsTheCachedAnswers) {
  upstream_.on("www.late.test", FakeReply::records({FakeRecord::a("", 300, "192.0.2.73")}));
  const std::string socket = dir_.file("ctl");
  start({"--control", socket});
  ASSERT_TRUE(ask("www.late.test"));
  ASSERT_TRUE(ask("www.late.test"));
  EXPECT_EQ(upstream_.queries("www.late.test"), 1u);
  const CommandResult r = ctl(socket, "ttl-cap late.test 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  upstream_.on("www.late.test", FakeReply::servfail());
  const auto a = ask("www.late.test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), wire::RCode::ServFail) << "served stale after ttl-cap 0\n" << a->text();
  EXPECT_EQ(upstream_.queries("www.late.test"), 2u);
}

// The dnstap file holds client addresses and names: 0600 even when hourglassd is started with
// umask 0 (outside systemd's UMask=0077).
TEST_F(Hardening, TheDnstapFileIs0600WhateverTheUmask) {
  const std::string file = dir_.file("dnstap.fstrm");
  const mode_t old = ::umask(0);
  start({"--dnstap", file});
  ::umask(old);
  struct stat st = {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// SIGHUP with a bad shadow-ttl in the config file: reported by the shadow-ttl reload (which
// keeps the zones in force), and the dnstap reload, which reads only its own keys, says
// nothing.
TEST_F(Hardening, SighupReportsABadShadowTtlAsShadowTtlNotDnstap) {
  const std::string conf = dir_.file("hourglass.toml");
  const std::string tap = dir_.file("dnstap.fstrm");
  std::ofstream(conf) << "dnstap = \"" << tap << "\"\nshadow-ttl = [\"a.test=60\"]\n";
  start({"--config", conf});
  std::ofstream(conf) << "dnstap = \"" << tap << "\"\nshadow-ttl = [\"a.test=forever\"]\n";
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  ASSERT_TRUE(
      daemon_->wait_for_output("SIGHUP: keeping the current shadow-ttl zones", Millis{5000}))
      << daemon_->output();
  const auto lines = daemon_->lines_with("SIGHUP: keeping the current shadow-ttl zones");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("shadow-ttl = \"a.test=forever\""), std::string::npos) << lines[0];
  // The reloads run one after the other on one thread: dnstap's came first.
  EXPECT_TRUE(daemon_->lines_with("keeping the dnstap settings").empty()) << daemon_->output();
  EXPECT_TRUE(daemon_->running());
}

// SIGHUP with a nameserver file whose lines are all invalid: it says the lines are invalid,
// not that the file has no nameserver line.
TEST_F(Hardening, SighupWithOnlyInvalidNameserversSaysWhichLines) {
  TempFile rc("nameserver " + upstream_.address() + "\n");
  daemon_ = Daemon::start({"--upstream-file", rc.path()});
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  rc.rewrite("nameserver dns.example\nnameserver 192.0.2.300\n");
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  // The file watch may say the same on its own (the file changed): count SIGHUP's answer.
  ASSERT_TRUE(daemon_->wait_for_output("SIGHUP: keeping the current upstreams", Millis{5000}))
      << daemon_->output();
  const auto lines = daemon_->lines_with("SIGHUP: keeping the current upstreams");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(rc.path() +
                          " has no usable nameserver line: line 1: nameserver \"dns.example\" "
                          "is not a numeric IPv4 or IPv6 address; line 2: nameserver "
                          "\"192.0.2.300\""),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[0].find("has no nameserver line"), std::string::npos) << lines[0];
  // A file with no nameserver line at all is still said as such.
  rc.rewrite("# nothing\n");
  ASSERT_TRUE(daemon_->signal(SIGHUP));
  bool said = false;
  for (int i = 0; i < 500 && !said; ++i) {
    said = !daemon_->lines_with(rc.path() + " has no nameserver line").empty();
    if (!said) std::this_thread::sleep_for(Millis{10});
  }
  EXPECT_TRUE(said) << daemon_->output();
}

// --check-config prints the per-line warnings start-up prints, and says how many.
TEST_F(Hardening, CheckConfigPrintsTheWarningsStartUpPrints) {
  TempFile rc("nameserver dns.example\nnameserver " + upstream_.address() + "\n");
  auto check = Daemon::start_with({"--check-config", "--upstream-file", rc.path()},
                                  StartOptions{.wait_ready = false});
  ASSERT_EQ(check->wait_exit(Millis{5000}), 0) << check->output();
  const std::string warning = "warning: " + rc.path() + ": line 1: nameserver \"dns.example\"";
  EXPECT_EQ(check->lines_with(warning).size(), 1u) << check->output();
  EXPECT_EQ(check->lines_with("hourglassd: configuration OK (1 warning above)").size(), 1u)
      << check->output();
  // The same warning as a real start prints.
  daemon_ = Daemon::start({"--upstream-file", rc.path()});
  ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  EXPECT_EQ(daemon_->lines_with(warning).size(), 1u) << daemon_->output();
}

// --check-config lists every mistake of the TOML file in one run, each with its line, and
// exits 2 (a wrong key or value), not just the first.
TEST_F(Hardening, CheckConfigListsEveryMistakeOfTheFileWithItsLine) {
  TempFile toml("upstream = [\"" + upstream_.address() +
                "\"]\ncache_size = \"64MiB\"\nthreads = \"many\"\n\nlisten = \"127.0.0.1:53\"\n");
  auto check = Daemon::start_with({"--check-config", "--config", toml.path()},
                                  StartOptions{.wait_ready = false});
  ASSERT_EQ(check->wait_exit(Millis{5000}), 2) << check->output();
  const std::string out = check->output();
  EXPECT_EQ(check->lines_with(toml.path() + ":2: unknown key \"cache_size\"").size(), 1u) << out;
  EXPECT_EQ(check->lines_with(toml.path() + ":3: threads = \"many\"").size(), 1u) << out;
  EXPECT_EQ(check->lines_with(toml.path() + ":5: listen = ").size(), 1u) << out;
  EXPECT_EQ(out.find("configuration OK"), std::string::npos) << out;
}

// --check-config prints the settings in force as a file: given back with --config, it checks
// out to the very same settings (the verdict is a comment of that file).
TEST_F(Hardening, CheckConfigPrintsTheSettingsAsAFileThatReadsBackTheSame) {
  auto first = Daemon::start_with(
      {"--check-config", "--upstream", upstream_.address(), "--cache-size", "32MiB", "--ttl-cap",
       "shop.example.com=60", "--forward", "corp.example=" + upstream_.address()},
      StartOptions{.wait_ready = false});
  ASSERT_EQ(first->wait_exit(Millis{5000}), 0) << first->output();
  const std::string printed = first->output();
  EXPECT_EQ(first->lines_with("cache-size = \"32MiB\"").size(), 1u) << printed;
  EXPECT_EQ(first->lines_with("ttl-cap = [\"shop.example.com=60\"]").size(), 1u) << printed;
  EXPECT_EQ(first->lines_with("corp.example=").size(), 1u) << printed;
  ASSERT_EQ(first->lines_with("# hourglassd: configuration OK").size(), 1u) << printed;

  TempFile toml(printed);
  auto again = Daemon::start_with({"--check-config", "--config", toml.path()},
                                  StartOptions{.wait_ready = false});
  ASSERT_EQ(again->wait_exit(Millis{5000}), 0) << again->output();
  EXPECT_EQ(again->output(), printed);
}

// A hosts file --check-config cannot use is an error (start-up would run without its names),
// not "configuration OK"; a malformed line in one it can read is a warning.
TEST_F(Hardening, CheckConfigRefusesAMissingOrOversizedHostsFile) {
  TempFile good("192.0.2.7 printer.lan\nnot-an-address x\n");
  TempFile big("");
  ASSERT_EQ(::truncate(big.path().c_str(), off_t{80} << 20), 0);  // past any hosts-file limit
  const std::string missing = good.path() + ".missing";
  auto check =
      Daemon::start_with({"--check-config", "--upstream", upstream_.address(), "--hosts-file",
                          good.path(), "--hosts-file", missing, "--hosts-file", big.path()},
                         StartOptions{.wait_ready = false});
  ASSERT_EQ(check->wait_exit(Millis{5000}), 1) << check->output();
  EXPECT_EQ(check->lines_with("error: --hosts-file: cannot open \"" + missing + "\"").size(), 1u)
      << check->output();
  EXPECT_EQ(check->lines_with("error: --hosts-file: \"" + big.path() + "\" is larger than").size(),
            1u)
      << check->output();
  EXPECT_EQ(check->lines_with("warning: hosts file " + good.path() + ":2").size(), 1u)
      << check->output();
  EXPECT_EQ(check->lines_with("configuration NOT OK: 2 errors above").size(), 1u)
      << check->output();
}

}  // namespace
}  // namespace hg::integration
