#include "tests/support/redis_server.h"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/command.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/resp_client.h"

namespace hg::test {

bool RedisServer::installed() {
  return std::system("command -v redis-server >/dev/null && command -v redis-cli >/dev/null") == 0;
}

RedisServer::RedisServer() {
  char tmpl[] = "/tmp/hg-redis-XXXXXX";
  if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  port_ = free_port();
}

RedisServer::~RedisServer() {
  async_.reset();
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
  if (child_ || dir_.empty() || port_ == 0) return false;
  // The port was free when chosen, but another test's program may have taken it since. On
  // the first start another port is tried then; a restart keeps its port (the instances
  // reconnect to it).
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (launch()) {
      started_ = true;
      return true;
    }
    if (started_) return false;
    port_ = free_port();
    if (port_ == 0) return false;
  }
  return false;
}

bool RedisServer::launch() {
  std::vector<std::string> argv{"redis-server",
                                "--port",
                                std::to_string(port_),
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--dir",
                                dir_,
                                "--logfile",
                                dir_ + "/redis.log",
                                "--enable-debug-command",
                                "local"};
  if (with_unix_socket)
    argv.insert(argv.end(), {"--unixsocket", unix_socket_path(), "--unixsocketperm", "660"});
  child_ = std::make_unique<Child>(argv, dir_ + "/redis.out");
  // Ready when PING answers on our own connection, each try bounded to 200 ms (a program other than
  // Redis on the port never answers PONG); at most 10 s.
  const bool up = eventually(
      [&] {
        if (!child_->running()) return true;
        Resp r(port_);
        if (!r.send({"PING"})) return false;
        const auto pong = r.read(std::chrono::milliseconds{200});
        return pong && *pong == std::vector<std::string>{"PONG"};
      },
      std::chrono::seconds{10}, std::chrono::milliseconds{50});
  if (up && child_->running()) return true;
  stop();
  return false;
}

void RedisServer::stop() {
  if (child_) child_->stop(SIGTERM, std::chrono::seconds{3});
  child_.reset();
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
  if (!child_ || child_->pid() <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(child_->pid()) + "/wchan");
  std::string where;
  std::getline(in, where);
  return where.find("nanosleep") != std::string::npos;
}

bool RedisServer::send_async(const std::vector<std::string>& command) {
  async_ = std::make_unique<Resp>(port_);
  return async_->send(command);
}

}  // namespace hg::test
