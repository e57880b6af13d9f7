// DaemonTest: a fixture with one FakeUpstream and an hourglassd forwarding to it, for tests
// that script the upstream first and then start the daemon with extra flags.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/daemon.h"
#include "tests/support/fake_upstream.h"

namespace hg::integration {

class DaemonTest : public ::testing::Test {
 protected:
  /// Starts hourglassd with `--upstream <the fake>` plus `extra`, and waits until it answers.
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--upstream", upstream_.address()};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = Daemon::start(args);
    ASSERT_TRUE(daemon_->ready()) << daemon_->output();
  }
  uint16_t port() const { return daemon_->port(); }

  test::FakeUpstream upstream_;
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace hg::integration
