#include "tests/support/redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/command.h"

namespace hg::test {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

uint16_t free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sin;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len) == 0)
    port = ntohs(sin.sin_port);
  ::close(fd);
  return port;
}

RedisServer::RedisServer() {
  char tmpl[] = "/tmp/hg-redis-XXXXXX";
  if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  port_ = free_tcp_port();
}

RedisServer::~RedisServer() {
  if (async_fd_ >= 0) ::close(async_fd_);
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string RedisServer::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

bool RedisServer::start() {
  if (pid_ > 0 || dir_.empty() || port_ == 0) return false;
  const std::string port = std::to_string(port_);
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Quiet: its log goes to a file in the temp dir.
    const std::string log = dir_ + "/redis.log";
    const std::string sock = unix_socket_path();
    if (with_unix_socket) {
      execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(),
             "--enable-debug-command", "local", "--unixsocket", sock.c_str(), "--unixsocketperm",
             "660", static_cast<char*>(nullptr));
    }
    execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save",
           "", "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(),
           "--enable-debug-command", "local", static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_ = pid;
  // Ready when PING answers; at most 10 s.
  for (int i = 0; i < 200; ++i) {
    if (cli({"PING"}) == "PONG") return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 60; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  std::string cmd = "redis-cli -p " + std::to_string(port_);
  for (const auto& a : args)
    cmd += " " + shell_quote(a);
  std::string out = run_command(cmd, 10, Stderr::Discard).output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
    out.pop_back();
  return out;
}

bool RedisServer::sleeping() const {
  if (pid_ <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/wchan");
  std::string where;
  std::getline(in, where);
  return where.find("nanosleep") != std::string::npos;
}

bool RedisServer::send_async(const std::string& inline_command) {
  if (async_fd_ >= 0) ::close(async_fd_);
  async_fd_ = connect_loopback(port_);
  if (async_fd_ < 0) return false;
  const std::string line = inline_command + "\r\n";
  return ::send(async_fd_, line.data(), line.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(line.size());
}

}  // namespace hg::test
