// One request to hourglassd's control socket, the whole reply collected (for top and
// use-as-system-resolver; plain commands stream their reply in main.cc instead).
#pragma once

#include <string>
#include <string_view>

namespace hg::ctl {

struct Reply {
  int status = 2;     ///< 0 ok, 1 hourglassd answered "error: ...", 2 not reached / no reply
  std::string text;   ///< the reply lines, each ending in '\n' (without the closing empty line)
  std::string error;  ///< status 2: what went wrong, one line
};

/// Sends `command` (no '\n') to the socket at `path` and reads the reply, waiting at most
/// `timeout_s` for each part of it.
Reply exchange(const std::string& path, std::string_view command, double timeout_s);

}  // namespace hg::ctl
