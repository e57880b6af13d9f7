// RedisConfig: the fleet's settings as configuration holds them (--redis, --redis-password-file,
// --redis-user, --fleet-key-file, ...). Here, in fleet/, so that the fleet's code needs nothing
// from the settings record above it; resolver/config.h holds one in Config::redis.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hg::resolver {

/// --redis and friends: the fleet's shared cache (resolver/fleet/fleet_cache.h). Off unless
/// --redis.
struct RedisConfig {
  bool unix_socket = false;
  std::string host{};  ///< numeric IP when !unix_socket
  uint16_t port = 6379;
  std::string path{};           ///< unix socket path
  std::string target{};         ///< as given: "127.0.0.1:6379" or "unix:/run/redis.sock"
  std::string password_file{};  ///< as given
  std::string password{};       ///< read from password_file at start-up
  std::string user{};           ///< Redis 6 ACL user: AUTH user password; empty: AUTH password
  std::string key_file{};       ///< --fleet-key-file as given
  std::string fleet_key{};      ///< its secret: authenticate values and messages (fleet_auth.h)
  unsigned db = 0;
  std::string prefix = "hg:";
  std::chrono::milliseconds timeout{20};
  bool enabled() const noexcept { return !target.empty(); }
};

}  // namespace hg::resolver
