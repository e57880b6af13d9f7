// FleetFixture: a real redis-server and a FakeUpstream, and fleet members (hourglassd with
// --redis) started against both, for the fleet's integration tests. Without redis-server the
// tests skip, and fail under CI (tests/support/requires.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/commands.h"
#include "tests/integration/daemon.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/redis_server.h"
#include "tests/support/requires.h"

namespace hg::integration {

/// The Redis deadline the fleet tests give their members unless a test sets its own. The default
/// (20 ms) is right for a resolver but not for a loaded 2-core test machine, where a store that
/// misses it is dropped and a test waiting for it fails. Tests about the deadline itself pass
/// --redis-timeout explicitly.
inline const std::vector<std::string> kPatientRedis{"--redis-timeout", "250"};

/// A fleet member: hourglassd with --redis and its own control socket.
struct Member {
  std::unique_ptr<Daemon> d;
  std::string socket;
};

/// `name` (type A) asked of a member over UDP.
inline std::optional<Answer> ask(const Member& m, const std::string& name,
                                 Millis timeout = Millis{4000}) {
  return udp_query(m.d->port(), build_query({.name = name}), timeout);
}

class FleetFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::RedisServer::installed())
      HG_SKIP_UNLESS_CI("redis-server / redis-cli not installed (scripts/install-deps)");
    ASSERT_TRUE(redis_.start()) << "redis-server did not start on port " << redis_.port();
  }

  /// A member forwarding to upstream_ with --redis redis_, a control socket of its own,
  /// --log-queries and then `extra`; returns once it answers and a worker is connected to Redis.
  Member start_member(const std::vector<std::string>& extra = {}) {
    Member m;
    m.socket = "/tmp/hg-fleet-" + random_label(12) + ".ctl";
    std::vector<std::string> args{"--upstream",     upstream_.address(), "--redis",
                                  redis_.address(), "--control",         m.socket,
                                  "--log-queries"};
    if (std::find(extra.begin(), extra.end(), "--redis-timeout") == extra.end())
      args.insert(args.end(), kPatientRedis.begin(), kPatientRedis.end());
    args.insert(args.end(), extra.begin(), extra.end());
    m.d = Daemon::start(args);
    EXPECT_TRUE(m.d->ready()) << m.d->output();
    EXPECT_TRUE(wait_connected(m)) << m.d->output();
    return m;
  }

  /// Until `workers` of the member's workers are connected to Redis (10 s at most).
  static bool wait_connected(const Member& m, int64_t workers = 1) {
    return test::eventually(
        [&] { return ctl_stat(m.socket, "fleet.connected_workers") >= workers; });
  }

  test::RedisServer redis_;
  test::FakeUpstream upstream_;
};

}  // namespace hg::integration
