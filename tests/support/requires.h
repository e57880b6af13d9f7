// HG_REQUIRE_PROGRAM_SKIP: what a test does when a program it runs (knotd, redis-server, tcpdump)
// is not installed. On a developer's machine it skips with the reason; under CI (the CI
// environment variable is set, as .ci/run's caller does) it fails, so a package missing from
// scripts/install-deps cannot hide behind a skipped test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#define HG_SKIP_UNLESS_CI(why)                                               \
  do {                                                                       \
    if (std::getenv("CI") != nullptr) {                                      \
      FAIL() << why << " (CI is set: scripts/install-deps must install it)"; \
    }                                                                        \
    GTEST_SKIP() << why;                                                     \
  } while (false)
