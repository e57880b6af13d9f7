#include "tests/integration/commands.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tests/support/ports.h"

namespace hg::integration {

CommandResult ctl(const std::string& socket, const std::string& args) {
  return run_command(std::string(HOURGLASS_CTL) + " --timeout 10 --socket '" + socket + "' " + args,
                     20);
}

int64_t ctl_stat(const std::string& socket, const std::string& name) {
  return stat_in(ctl(socket, "stats").output, name);
}

int64_t stat_in(const std::string& out, const std::string& name) {
  const std::string needle = name + " ";
  for (std::size_t at = out.find(needle); at != std::string::npos; at = out.find(needle, at + 1)) {
    if (at != 0 && out[at - 1] != '\n') continue;  // a longer name ending in this one
    const std::size_t end = out.find('\n', at);
    const std::string value =
        out.substr(at + needle.size(),
                   end == std::string::npos ? std::string::npos : end - at - needle.size());
    char* stop = nullptr;
    const long long v = std::strtoll(value.c_str(), &stop, 10);
    return stop == value.c_str() ? -1 : static_cast<int64_t>(v);
  }
  return -1;
}

std::map<std::string, std::string> upstream_line(const std::string& text,
                                                 const std::string& server) {
  std::map<std::string, std::string> out;
  const auto at = text.find(server + " ");
  if (at == std::string::npos) return out;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  std::size_t i = line.find(' ');
  while (i != std::string::npos) {
    const std::size_t next = line.find(' ', i + 1);
    const std::string field = line.substr(i + 1, next == std::string::npos ? next : next - i - 1);
    const auto eq = field.find('=');
    if (eq != std::string::npos) out[field.substr(0, eq)] = field.substr(eq + 1);
    i = next;
  }
  return out;
}

std::string http_get(uint16_t port, const std::string& path, const char* from) {
  const int fd = test::connect_tcp(test::ipv4_address("127.0.0.1", port), from, 0,
                                   std::chrono::milliseconds{3000});
  if (fd < 0) return "";
  std::string out;
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    char buf[16384];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, 200) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

double metric_sample(const std::string& text, const std::string& name) {
  const std::string needle = "\n" + name + " ";
  const auto p = text.find(needle);
  if (p == std::string::npos) return -1;
  return std::stod(text.substr(p + needle.size()));
}

}  // namespace hg::integration
