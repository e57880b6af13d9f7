// Replays a fuzz corpus without libFuzzer: calls LLVMFuzzerTestOneInput on every regular file
// in each directory (or file) given on the command line. Used by ctest so that every build,
// including CI's ASan+UBSan one, re-runs the corpus and every past crash.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

int replay_file(const std::filesystem::path& p) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (f == nullptr) {
    std::fprintf(stderr, "replay: cannot open %s\n", p.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes;
  uint8_t buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + n);
  std::fclose(f);
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0;
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (!e.is_regular_file()) continue;
        failures += replay_file(e.path());
        ++count;
      }
    } else {
      failures += replay_file(arg);
      ++count;
    }
  }
  std::printf("replay: %zu inputs, %d unreadable\n", count, failures);
  return failures == 0 && count > 0 ? 0 : 1;
}
