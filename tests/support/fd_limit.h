// NoMoreDescriptors: for tests of what a server does when accept() fails with EMFILE. Lowers
// this process's descriptor limit so that no new descriptor can be made, and puts it back
// when it goes.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

namespace hg::test {

class NoMoreDescriptors {
 public:
  NoMoreDescriptors() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    const int probe = ::dup(0);  // the lowest free number: every one below it is in use
    ::close(probe);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(probe);
    ok_ = probe >= 0 && ::setrlimit(RLIMIT_NOFILE, &low) == 0;
  }
  ~NoMoreDescriptors() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  NoMoreDescriptors(const NoMoreDescriptors&) = delete;
  NoMoreDescriptors& operator=(const NoMoreDescriptors&) = delete;
  /// Whether the limit was lowered.
  bool ok() const noexcept { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

}  // namespace hg::test
