// The fleet's trust boundary against a real redis-server: whoever can write to Redis tries to
// make instances with --fleet-key-file serve or obey what no instance wrote — a forged value
// under PREFIXc:, a forged lock hand-over on PREFIXd:, forged, replayed and stale fleet
// messages, a forged persisted ttl cap — and each is refused and counted. Also the Redis
// connection itself: a wrong password costs a bounded number of connections, an ACL user
// name is sent, a lock planted without an expiry is not waited on.
// No fixed sleeps: every wait polls with a bound.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cache/key.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/redis_value.h"
#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/integration/fleet_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/redis_server.h"
#include "tests/support/requires.h"
#include "tests/support/resp_client.h"
#include "wire/name.h"

namespace hg::integration {
namespace {

using test::eventually;
using test::FakeRecord;
using test::FakeReply;
using test::FakeUpstream;
using test::RedisServer;
using test::Resp;
using wire::RCode;
using Clock = std::chrono::steady_clock;
namespace fleet = resolver::fleet;

constexpr int64_t kYear2100Ms = 4102444800000;
const std::string kSecret = "0123456789abcdef0123456789abcdef-fleet-test-secret";
const std::string kOtherSecret = "fedcba9876543210fedcba9876543210-another-secret!!";

/// A file with `text` and `mode`, removed on destruction.
struct ModeFile {
  std::string path;
  ModeFile(const std::string& text, mode_t mode) {
    char tmpl[] = "/tmp/hg-secret-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd < 0) std::abort();
    path = tmpl;
    const std::string line = text + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
    ::fchmod(fd, mode);
    ::close(fd);
  }
  ~ModeFile() { std::remove(path.c_str()); }
};

cache::CacheKey a_key(const std::string& name) {
  return cache::CacheKey::make(*wire::Name::from_text(name + "."), wire::RRType::A, 1, false,
                               false);
}

/// A DNS answer for `name` A: one record, `ip` (four bytes), `ttl`.
std::vector<uint8_t> answer(const std::string& name, std::array<uint8_t, 4> ip, uint32_t ttl) {
  std::vector<uint8_t> m{0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0};
  const auto qname = wire::Name::from_text(name + ".");  // kept: wire() is a view into it
  m.insert(m.end(), qname->wire().begin(), qname->wire().end());
  m.insert(m.end(), {0, 1, 0, 1, 0xC0, 0x0C, 0, 1, 0, 1});
  for (int s = 24; s >= 0; s -= 8)
    m.push_back(static_cast<uint8_t>(ttl >> s));
  m.insert(m.end(), {0, 4});
  m.insert(m.end(), ip.begin(), ip.end());
  return m;
}

/// A value as an attacker would write it: 203.0.113.66, TTL 86400, inserted at `inserted_ms`;
/// signed with `secret` for Redis key `signed_for` when a secret is given.
std::string forged_value(const std::string& name, int64_t inserted_ms, const std::string* secret,
                         const std::string& signed_for) {
  const auto msg = answer(name, {203, 0, 113, 66}, 86400);
  auto v = fleet::encode_value(a_key(name), inserted_ms, msg, secret != nullptr);
  if (secret != nullptr) {
    auto auth = fleet::FleetAuth::create(fleet::bytes(*secret), nullptr);
    fleet::seal_value(*auth, signed_for, v);
  }
  return {v.begin(), v.end()};
}

std::string value_key(const std::string& name, const std::string& prefix = "hg:") {
  return prefix + "c:" + name + ". 1 1 0";
}

class FleetSecurityTest : public FleetFixture {
 protected:
  void SetUp() override {
    FleetFixture::SetUp();
    upstream_.set_default(FakeReply::records({FakeRecord::a("", 300, "192.0.2.20")}));
  }

  /// A member, with --fleet-key-file (the test's key) unless `with_key` is false.
  Member start(std::vector<std::string> extra = {}, bool with_key = true) {
    if (with_key) extra.insert(extra.begin(), {"--fleet-key-file", key_.path});
    return start_member(extra);
  }

  static std::string first_address(const Answer& a) {
    const std::string t = a.text();
    for (const char* ip : {"203.0.113.66", "192.0.2.20"})
      if (t.find(ip) != std::string::npos) return ip;
    return "?";
  }

  ModeFile key_{kSecret, 0600};
};

TEST_F(FleetSecurityTest, ForgedValuesAreNeitherServedNorTrustedAndEachIsCounted) {
  Member k = start();
  Resp r(redis_.port());
  const int64_t now_ms =
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  struct Case {
    const char* what;
    std::string name;
    std::string value;
    const char* counter;
  };
  const std::string n1 = random_label() + ".victim.test";
  const std::string n2 = random_label() + ".victim.test";
  const std::string n3 = random_label() + ".victim.test";
  const std::string n4 = random_label() + ".victim.test";
  const std::vector<Case> cases{
      // Written by hand (or by an instance without the key), insert time in 2100.
      {"unsigned", n1, forged_value(n1, kYear2100Ms, nullptr, ""), "fleet.auth_failed_values"},
      // Signed with some other key.
      {"other key", n2, forged_value(n2, now_ms, &kOtherSecret, value_key(n2)),
       "fleet.auth_failed_values"},
      // A valid value of another fleet (prefix x:) moved under ours: the tag binds the name.
      {"moved", n3, forged_value(n3, now_ms, &kSecret, value_key(n3, "x:")),
       "fleet.auth_failed_values"},
      // Signed with our key, but inserted in 2100: its TTL would never count down.
      {"future", n4, forged_value(n4, kYear2100Ms, &kSecret, value_key(n4)), "fleet.future_values"},
  };
  int64_t auth_failed = 0;
  for (const Case& c : cases) {
    ASSERT_EQ(r.call({"SET", value_key(c.name), c.value}), std::vector<std::string>{"OK"});
    const int64_t before = ctl_stat(k.socket, c.counter);
    auto a = ask(k, c.name);
    ASSERT_TRUE(a) << c.what;
    EXPECT_EQ(a->rcode(), RCode::NoError) << c.what;
    EXPECT_EQ(first_address(*a), "192.0.2.20") << c.what << "\n" << a->text();
    EXPECT_EQ(upstream_.queries(c.name + "."), 1u) << c.what;
    EXPECT_EQ(ctl_stat(k.socket, c.counter), before + 1) << c.what;
    if (std::string(c.counter) == "fleet.auth_failed_values") ++auth_failed;
  }
  EXPECT_EQ(ctl_stat(k.socket, "fleet.auth_failed_values"), auth_failed);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.l2_hits"), 0);
  EXPECT_NE(k.d->output().find("does not verify with --fleet-key-file"), std::string::npos);

  // The control: the same shape signed properly, inserted a second ago, is served from Redis.
  const std::string ok = random_label() + ".genuine.test";
  ASSERT_EQ(
      r.call({"SET", value_key(ok), forged_value(ok, now_ms - 1000, &kSecret, value_key(ok))}),
      std::vector<std::string>{"OK"});
  auto a = ask(k, ok);
  ASSERT_TRUE(a);
  EXPECT_EQ(first_address(*a), "203.0.113.66");
  EXPECT_EQ(upstream_.queries(ok + "."), 0u);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.l2_hits"), 1);
  // Its TTL counts from the signed insert time: never above the record's.
  ASSERT_EQ(a->ttls().size(), 1u);
  EXPECT_LE(a->ttls()[0], 86399u);
}

TEST_F(FleetSecurityTest, AForgedLockHandOverIsNotTaken) {
  Member k = start({"--client-timeout", "2500", "--upstream-timeout", "3000"});
  const std::string name = random_label() + ".handover.test";
  // Another "instance" holds the lock (with an expiry, as hourglass writes it), so K waits.
  ASSERT_EQ(redis_.cli({"SET", "hg:l:" + name + ". 1 1 0", "someone", "PX", "10000"}), "OK");
  UdpClient client;
  ASSERT_TRUE(client.send(k.d->port(), build_query({.name = name})));
  const std::string channel = "hg:d:" + name + ". 1 1 0";
  ASSERT_TRUE(eventually([&] {
    return redis_.cli({"PUBSUB", "NUMSUB", channel}) == channel + "\n1";
  })) << redis_.cli({"PUBSUB", "NUMSUB", channel});
  Resp r(redis_.port());
  const auto published =
      r.call({"PUBLISH", channel, forged_value(name, kYear2100Ms, &kOtherSecret, value_key(name))});
  ASSERT_TRUE(published);
  EXPECT_EQ(*published, std::vector<std::string>{"1"});
  auto bytes = client.receive(Millis{4000});
  ASSERT_TRUE(bytes);
  auto a = parse_answer(*bytes);
  ASSERT_TRUE(a);
  EXPECT_EQ(first_address(*a), "192.0.2.20") << a->text();
  EXPECT_EQ(ctl_stat(k.socket, "fleet.auth_failed_values"), 1);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.lock_fallbacks"), 1);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.lock_answered"), 0);
  EXPECT_EQ(upstream_.queries(name + "."), 1u);
}

TEST_F(FleetSecurityTest, ForgedReplayedAndStaleFleetMessagesAreNotObeyed) {
  Member a = start();
  Member b = start();
  const std::string name = random_label() + ".kept.test";
  auto cached_on_b = [&] {
    return ctl(b.socket, "dump " + name).output.find("; 1 entry") != std::string::npos;
  };
  ASSERT_TRUE(ask(b, name));
  ASSERT_TRUE(cached_on_b());
  Resp pub(redis_.port());
  auto wait_counter = [&](const char* counter, int64_t want) {
    return eventually([&] { return ctl_stat(b.socket, counter) == want; });
  };

  // 1. The unauthenticated form anyone can PUBLISH.
  ASSERT_TRUE(pub.call({"PUBLISH", "hg:fleet", "v1 evil flush-all"}));
  EXPECT_TRUE(wait_counter("fleet.auth_failed_messages", 1));
  // 2. Sealed with another key.
  auto other = fleet::FleetAuth::create(fleet::bytes(kOtherSecret), nullptr);
  const int64_t now_ms =
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  ASSERT_TRUE(
      pub.call({"PUBLISH", "hg:fleet",
                fleet::seal_fleet_message(*other, "hg:fleet", now_ms, 1, "v1 evil flush-all")}));
  EXPECT_TRUE(wait_counter("fleet.auth_failed_messages", 2));
  // 3. Sealed with our key, but 60 s old (as if held back and sent later).
  auto ours = fleet::FleetAuth::create(fleet::bytes(kSecret), nullptr);
  ASSERT_TRUE(pub.call(
      {"PUBLISH", "hg:fleet",
       fleet::seal_fleet_message(*ours, "hg:fleet", now_ms - 60000, 1, "v1 late flush-all")}));
  EXPECT_TRUE(wait_counter("fleet.replayed_messages", 1));
  EXPECT_TRUE(cached_on_b());
  EXPECT_EQ(ctl_stat(b.socket, "fleet.fleet_received"), 0);

  // 4. A genuine flush from A, captured on the way, is obeyed once; replayed, it is refused.
  Resp sub(redis_.port());
  ASSERT_TRUE(sub.call({"SUBSCRIBE", "hg:fleet"}));
  EXPECT_NE(ctl(a.socket, "flush --fleet").output.find("fleet: sent"), std::string::npos);
  const auto msg = sub.read(Millis{5000});
  ASSERT_TRUE(msg && msg->size() == 3 && (*msg)[0] == "message") << (msg ? msg->size() : 0);
  const std::string captured = (*msg)[2];
  EXPECT_EQ(captured.substr(0, 3), "s1 ");
  EXPECT_TRUE(wait_counter("fleet.fleet_received", 1));
  EXPECT_TRUE(eventually([&] { return !cached_on_b(); }));
  ASSERT_TRUE(ask(b, name));
  ASSERT_TRUE(cached_on_b());
  ASSERT_TRUE(pub.call({"PUBLISH", "hg:fleet", captured}));
  EXPECT_TRUE(wait_counter("fleet.replayed_messages", 2));
  EXPECT_TRUE(cached_on_b());
  EXPECT_EQ(ctl_stat(b.socket, "fleet.fleet_received"), 1);
  EXPECT_EQ(ctl_stat(b.socket, "fleet.auth_failed_messages"), 2);
}

TEST_F(FleetSecurityTest, AForgedPersistedTtlCapIsNotApplied) {
  Member a = start();
  const std::string zone = random_label() + ".shop.test";
  EXPECT_NE(ctl(a.socket, "ttl-cap " + zone + " 30 --fleet").output.find("fleet: sent"),
            std::string::npos);
  const auto cap_stored = [&] { return redis_.cli({"HEXISTS", "hg:ttl-caps", zone + "."}) == "1"; };
  ASSERT_TRUE(eventually(cap_stored));
  const std::string genuine = redis_.cli({"HGET", "hg:ttl-caps", zone + "."});
  EXPECT_EQ(genuine.substr(0, 3), "30 ");
  // Caching off for everything, by hand; and the genuine value moved to another zone.
  ASSERT_EQ(redis_.cli({"HSET", "hg:ttl-caps", ".", "0"}), "1");
  ASSERT_EQ(redis_.cli({"HSET", "hg:ttl-caps", "evil.test.", genuine}), "1");

  Member c = start();  // reads the caps when it connects
  ASSERT_TRUE(eventually([&] {
    return ctl(c.socket, "ttl-caps").output.find(zone + ". 30") != std::string::npos;
  })) << ctl(c.socket, "ttl-caps").output;
  EXPECT_TRUE(eventually([&] { return ctl_stat(c.socket, "fleet.auth_failed_caps") == 2; }));
  const std::string caps = ctl(c.socket, "ttl-caps").output;
  EXPECT_EQ(caps.find("evil.test."), std::string::npos) << caps;
  EXPECT_EQ(caps.find("\n. 0"), std::string::npos) << caps;
  EXPECT_NE(caps.rfind(". 0", 0), 0u) << caps;
  // And answers are still cached with their TTL.
  const std::string name = random_label() + ".cached.test";
  ASSERT_TRUE(ask(c, name));
  EXPECT_NE(ctl(c.socket, "dump " + name).output.find("; 1 entry"), std::string::npos);
}

TEST_F(FleetSecurityTest, WithoutAKeyTheStartSaysOnceThatRedisIsTrusted) {
  Member m = start({"--threads", "2"}, /*with_key=*/false);
  EXPECT_EQ(m.d->lines_with("is trusted").size(), 1u) << m.d->output();
  Member k = start({"--threads", "2"});
  EXPECT_EQ(k.d->lines_with("is trusted").size(), 0u) << k.d->output();
  EXPECT_EQ(k.d->lines_with("authenticated with HMAC-SHA256").size(), 1u) << k.d->output();
}

TEST_F(FleetSecurityTest, SecretFilesOthersCanReadOrThatAreTooShortAreRefusedWithTheFix) {
  ModeFile loose(kSecret, 0644);
  ModeFile group_writable(kSecret, 0620);
  ModeFile short_key("tooshort", 0600);
  ModeFile password("secret", 0604);
  ModeFile foreign(kSecret, 0600);
  const bool chowned = ::geteuid() == 0 && ::chown(foreign.path.c_str(), 65534, 65534) == 0;
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases{
      {{"--fleet-key-file", loose.path}, "mode 0644 lets group or other read it"},
      {{"--fleet-key-file", group_writable.path}, "writable by its group (mode 0620)"},
      {{"--fleet-key-file", short_key.path}, "at least 32 are needed"},
      {{"--redis-password-file", password.path}, "chmod 600 " + password.path},
      {{"--redis-user", "hourglass"}, "needs its password"},
  };
  std::vector<Case> all = cases;
  // A FIFO at the path: refused at once, the start does not hang on it.
  const std::string fifo = "/tmp/hg-fifo-" + random_label(12);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  all.push_back({{"--fleet-key-file", fifo}, "not a regular file"});
  // Owned by someone else (only root can make such a file here).
  if (chowned)
    all.push_back({{"--fleet-key-file", foreign.path},
                   "owned by uid 65534 (nobody), not by root or the user hourglassd runs as"});
  for (const Case& c : all) {
    std::vector<std::string> args{"--upstream", upstream_.address(), "--redis", redis_.address()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto d = Daemon::start(args);
    EXPECT_FALSE(d->ready());
    EXPECT_EQ(d->wait_exit(Millis{5000}), 2) << d->output();
    EXPECT_NE(d->output().find(c.expect), std::string::npos) << d->output();
  }
  std::remove(fifo.c_str());
}

TEST_F(FleetSecurityTest, AWrongPasswordMakesABoundedNumberOfConnectionsAndLogsOnce) {
  ASSERT_EQ(redis_.cli({"CONFIG", "SET", "requirepass", "right-password"}), "OK");
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-a", "right-password", "--no-auth-warning"});
    return redis_.cli(args);
  };
  int cli_calls = 0;
  auto connections = [&]() -> int64_t {
    ++cli_calls;
    const std::string info = cli({"INFO", "stats"});
    const auto at = info.find("total_connections_received:");
    return at == std::string::npos ? -1 : std::stoll(info.substr(at + 27));
  };
  ModeFile wrong("wrong-password", 0600);
  const int64_t base = connections();
  cli_calls = 0;
  const auto t0 = Clock::now();
  auto d = Daemon::start({"--upstream", upstream_.address(), "--redis", redis_.address(),
                          "--redis-password-file", wrong.path});
  ASSERT_TRUE(d->ready()) << d->output();
  // One worker: a command and a pub/sub connection per attempt; attempts 100 ms apart,
  // doubling to 5 s. The 7th attempt comes 6.3 s after the first: 14 connections can not
  // come sooner than 6.3 s (they came at 20 a second when the backoff reset on connect).
  int64_t made = 0;
  ASSERT_TRUE(eventually(
      [&] {
        made = connections() - base - cli_calls;
        return made >= 14;
      },
      Millis{30000}))
      << made;
  const auto took = std::chrono::duration_cast<Millis>(Clock::now() - t0);
  EXPECT_GE(took.count(), 6000) << made << " connections";
  // The daemon answers meanwhile (Redis is an accelerator, never a dependency).
  auto a = udp_query(d->port(), build_query({.name = random_label() + ".nopass.test"}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  // One line per connection going from "unknown" to "refused", none per attempt.
  EXPECT_EQ(d->lines_with("WRONGPASS").size(), 2u) << d->output();
  EXPECT_EQ(d->lines_with("connected to").size(), 0u) << d->output();
}

TEST_F(FleetSecurityTest, AnAclUserNameIsSentWithItsPassword) {
  ASSERT_EQ(
      redis_.cli({"ACL", "SETUSER", "hourglass", "on", ">acl-password", "~hg:*", "&hg:*", "+@all",
                  "-@dangerous", "+@scripting"}),  // the rules docs/security.md suggests
      "OK");
  ASSERT_EQ(redis_.cli({"ACL", "SETUSER", "default", "off"}), "OK");
  ModeFile password("acl-password", 0600);
  Member m = start({"--redis-user", "hourglass", "--redis-password-file", password.path});
  const std::string name = random_label() + ".acl.test";
  ASSERT_TRUE(ask(m, name));
  EXPECT_TRUE(eventually([&] { return ctl_stat(m.socket, "fleet.l2_stores") == 1; }))
      << ctl(m.socket, "stats").output;
  auto as_user = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"--user", "hourglass", "--pass", "acl-password", "--no-auth-warning"});
    return redis_.cli(args);
  };
  // Flushes (SCAN + UNLINK) and caps (HSET) are allowed too.
  EXPECT_NE(ctl(m.socket, "flush --fleet").output.find("fleet: sent"), std::string::npos);
  EXPECT_TRUE(eventually([&] { return as_user({"EXISTS", "hg:c:" + name + ". 1 1 0"}) == "0"; }));
  EXPECT_NE(ctl(m.socket, "ttl-cap acl.test 60 --fleet").output.find("fleet: sent"),
            std::string::npos);
  EXPECT_TRUE(eventually([&] { return as_user({"HEXISTS", "hg:ttl-caps", "acl.test."}) == "1"; }));
}

TEST_F(FleetSecurityTest, AFleetOnAUnixSocketWithMode0660SharesAuthenticatedValues) {
  RedisServer local;
  local.with_unix_socket = true;
  ASSERT_TRUE(local.start());
  const std::string path = local.unix_socket_path();
  struct stat st = {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);  // the redis user and its group only
  std::vector<Member> members;
  for (int i = 0; i < 2; ++i) {
    Member m;
    m.socket = "/tmp/hg-fsec-" + random_label(12) + ".ctl";
    std::vector<std::string> args{
        "--upstream", upstream_.address(), "--redis", "unix:" + path, "--control",
        m.socket,     "--fleet-key-file",  key_.path};
    args.insert(args.end(), kPatientRedis.begin(), kPatientRedis.end());
    m.d = Daemon::start(args);
    ASSERT_TRUE(m.d->ready()) << m.d->output();
    ASSERT_TRUE(wait_connected(m)) << m.d->output();
    members.push_back(std::move(m));
  }
  const std::string name = random_label() + ".unix.test";
  ASSERT_TRUE(ask(members[0], name));
  ASSERT_TRUE(eventually([&] { return ctl_stat(members[0].socket, "fleet.l2_stores") == 1; }))
      << ctl(members[0].socket, "stats").output;
  auto b = ask(members[1], name);
  ASSERT_TRUE(b);
  EXPECT_EQ(first_address(*b), "192.0.2.20");
  EXPECT_EQ(ctl_stat(members[1].socket, "fleet.l2_hits"), 1);
  EXPECT_EQ(upstream_.queries(name), 1u);
}

TEST_F(FleetSecurityTest, ALockWithoutExpiryIsNotWaitedOn) {
  // Waiting would take the client timeout (2.9 s) and the query gives up after 2 s: the
  // answer must come from the upstream straight away.
  Member k = start({"--client-timeout", "2900", "--upstream-timeout", "3000"});
  const std::string name = random_label() + ".nolimit.test";
  const std::string lock = "hg:l:" + name + ". 1 1 0";
  ASSERT_EQ(redis_.cli({"SET", lock, "planted"}), "OK");
  ASSERT_EQ(redis_.cli({"PTTL", lock}), "-1");
  auto a = ask(k, name, Millis{2000});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode(), RCode::NoError);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.lock_unbounded"), 1);
  EXPECT_EQ(ctl_stat(k.socket, "fleet.lock_waits"), 0);
  EXPECT_EQ(upstream_.queries(name + "."), 1u);
  // The planted lock got our lock's expiry, so it goes away by itself.
  const std::string pttl = redis_.cli({"PTTL", lock});
  EXPECT_TRUE(pttl == "-2" || (std::stoll(pttl) > 0 && std::stoll(pttl) <= 3000)) << pttl;
}

}  // namespace
}  // namespace hg::integration
