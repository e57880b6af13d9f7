#include "tests/support/resp_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace hg::test {

using Clock = std::chrono::steady_clock;

Resp::Resp(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
  timeval tv{0, 200000};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

Resp::~Resp() {
  if (fd_ >= 0) ::close(fd_);
}

bool Resp::send(const std::vector<std::string>& argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv)
    out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return fd_ >= 0 &&
         ::send(fd_, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
}

std::optional<std::vector<std::string>> Resp::read(std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  for (;;) {
    std::vector<std::string> leaves;
    std::size_t at = 0;
    if (parse(at, leaves)) {
      buf_.erase(0, at);
      return leaves;
    }
    if (Clock::now() >= end) return std::nullopt;
    char tmp[4096];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n > 0) buf_.append(tmp, static_cast<std::size_t>(n));
    if (n == 0) return std::nullopt;
  }
}

std::optional<std::vector<std::string>> Resp::call(const std::vector<std::string>& argv) {
  if (!send(argv)) return std::nullopt;
  return read();
}

bool Resp::parse(std::size_t& at, std::vector<std::string>& out) const {
  const std::size_t eol = buf_.find("\r\n", at);
  if (eol == std::string::npos || eol == at) return false;
  const char kind = buf_[at];
  const std::string line = buf_.substr(at + 1, eol - at - 1);
  at = eol + 2;
  if (kind == '+' || kind == ':') {
    out.push_back(line);
    return true;
  }
  if (kind == '-') {
    out.push_back("-" + line);
    return true;
  }
  const long n = std::stol(line);
  if (kind == '$') {
    if (n < 0) {
      out.emplace_back();
      return true;
    }
    if (buf_.size() < at + static_cast<std::size_t>(n) + 2) return false;
    out.push_back(buf_.substr(at, static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n) + 2;
    return true;
  }
  if (kind == '*') {
    for (long i = 0; i < n; ++i)
      if (!parse(at, out)) return false;
    return true;
  }
  return false;
}

}  // namespace hg::test
