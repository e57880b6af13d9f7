// Resp: a minimal RESP (Redis protocol) client on its own TCP connection to 127.0.0.1, for
// what redis-cli cannot do from a test: binary-safe GET/SET of values with any bytes in them,
// PUBLISH, and SUBSCRIBE to capture what instances publish. Every reply is read with a bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hg::test {

class Resp {
 public:
  explicit Resp(uint16_t port);
  ~Resp();
  Resp(const Resp&) = delete;
  Resp& operator=(const Resp&) = delete;

  /// Writes one command (an array of bulk strings); false if not connected or short.
  bool send(const std::vector<std::string>& argv);
  /// One reply, its leaves in order (strings, integers as text, errors as "-...", a nil bulk
  /// string as ""); nullopt when none is complete within `timeout`.
  std::optional<std::vector<std::string>> read(
      std::chrono::milliseconds timeout = std::chrono::milliseconds{3000});
  /// send() then read().
  std::optional<std::vector<std::string>> call(const std::vector<std::string>& argv);

 private:
  bool parse(std::size_t& at, std::vector<std::string>& out) const;

  int fd_ = -1;
  std::string buf_;
};

}  // namespace hg::test
