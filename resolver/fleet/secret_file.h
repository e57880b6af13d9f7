// Files holding secrets (--fleet-key-file, --redis-password-file): read once at start-up, and
// only when nobody but hourglassd's user (or root) could have written or read them, as ssh
// does for private keys. The error says exactly what to change.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hg::resolver {

/// Reads into `out` the first line of `path` (without its line end), after checking that it is a
/// regular file (symbolic links are followed to it), owned by the effective user or root, with no
/// group or other permission bits, at most 4096 bytes, and that the line has at least `min_size`
/// bytes. Returns the error.
std::optional<std::string> read_secret_file(const std::string& path, std::size_t min_size,
                                            std::string& out);

}  // namespace hg::resolver
