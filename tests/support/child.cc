#include "tests/support/child.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace hg::test {

Child::Child(std::vector<std::string> argv, const std::string& log, Options options) {
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  int in_pipe[2] = {-1, -1};
  if (options.open_stdin && pipe2(in_pipe, O_CLOEXEC) != 0) in_pipe[0] = in_pipe[1] = -1;
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the test binary died before prctl
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    const int in = in_pipe[0] >= 0 ? in_pipe[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in >= 0) dup2(in, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  if (in_pipe[0] >= 0) close(in_pipe[0]);
  stdin_ = in_pipe[1];
  if (pid_ < 0 && stdin_ >= 0) close_stdin();
}

Child::~Child() {
  stop(SIGTERM);
  close_stdin();
}

bool Child::running() {
  if (pid_ <= 0) return false;
  if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void Child::signal(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

bool Child::stop(int sig, std::chrono::milliseconds wait) {
  if (pid_ <= 0) return true;
  kill(pid_, sig);
  kill(pid_, SIGCONT);
  const auto end = std::chrono::steady_clock::now() + wait;
  do {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  } while (std::chrono::steady_clock::now() < end);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return false;
}

void Child::close_stdin() {
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
}

}  // namespace hg::test
