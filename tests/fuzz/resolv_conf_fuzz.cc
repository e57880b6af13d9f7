// Fuzz target: what use-as-system-resolver reads of a resolv.conf (tools/ctl/system_resolver.h):
// the lines it keeps and the manager it finds. Any input must give a bounded list of lines,
// each one a keyword glibc reads with a value, none with a line break or a control character.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tools/ctl/system_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hg::ctl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto kept = resolv_conf_kept_lines(text);
  for (const auto& line : kept) {
    if (line.size() > 1024 || line.find('\n') != std::string::npos) std::abort();
    if (!(line.starts_with("search") || line.starts_with("domain") || line.starts_with("options") ||
          line.starts_with("sortlist"))) {
      std::abort();
    }
    for (const char c : line) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) std::abort();
    }
  }
  const auto half = text.substr(0, text.size() / 2);
  const auto m = resolv_conf_manager(text.substr(half.size()), half);
  if (m != ResolvManager::kNone && m != ResolvManager::kOpenresolv &&
      m != ResolvManager::kNetworkManager) {
    std::abort();
  }
  return 0;
}
