// Access to the captured test vectors in tests/vectors/ (see its README.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hg::wire::test {

inline std::filesystem::path vectors_dir() {
  return HG_VECTORS_DIR;
}

/// The names (without .bin) of every captured vector, sorted.
inline std::vector<std::string> vector_names() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(vectors_dir()))
    if (e.path().extension() == ".bin") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// (Sized reads, not istreambuf_iterator: g++ 12 -Wnull-dereference trips inside <streambuf>.)
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s(std::filesystem::file_size(p), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

inline std::vector<uint8_t> read_vector(const std::string& name) {
  const auto s = read_file(vectors_dir() / (name + ".bin"));
  return std::vector<uint8_t>(s.begin(), s.end());
}

inline std::string read_golden(const std::string& name) {
  return read_file(vectors_dir() / "golden" / (name + ".txt"));
}

}  // namespace hg::wire::test
