// TempDir: a fresh directory under /tmp for one test's files, removed with everything in it
// when the TempDir goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace hg::test {

class TempDir {
 public:
  /// /tmp/PREFIX-XXXXXX; path() is "" when it could not be made (a test using it then fails
  /// on its first file).
  explicit TempDir(std::string_view prefix = "hg-test") {
    std::string tmpl = "/tmp/" + std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// The path of `name` in the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `contents` to `name` in the directory; its path.
  std::string write(const std::string& name, std::string_view contents) const {
    const std::string p = file(name);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << contents;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace hg::test
