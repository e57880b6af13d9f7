// bytes_of("text"): a string's bytes as the byte span the code under test takes (checksums,
// hashes, datagrams). A view: it lives as long as the string.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hg::test {

inline std::span<const uint8_t> bytes_of(std::string_view s) noexcept {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace hg::test
