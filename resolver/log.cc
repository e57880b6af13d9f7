#include "resolver/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/decimal.h"

namespace hg::resolver::log {

namespace {

// -1 undecided, 0 plain, 1 journal.
std::atomic<int> g_journal{-1};

}  // namespace

bool journal_stream_matches(const char* env, int fd) {
  if (env == nullptr) return false;
  const std::string_view v(env);
  const auto colon = v.find(':');
  if (colon == std::string_view::npos) return false;
  const auto dev = base::parse_decimal<unsigned long long>(v.substr(0, colon));
  const auto ino = base::parse_decimal<unsigned long long>(v.substr(colon + 1));
  if (!dev || !ino) return false;
  struct stat st = {};
  if (::fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == *dev &&
         static_cast<unsigned long long>(st.st_ino) == *ino;
}

bool to_journal() {
  int j = g_journal.load(std::memory_order_relaxed);
  if (j < 0) {
    j = journal_stream_matches(std::getenv("JOURNAL_STREAM"), STDERR_FILENO) ? 1 : 0;
    g_journal.store(j, std::memory_order_relaxed);
  }
  return j == 1;
}

void set_journal(bool on) {
  g_journal.store(on ? 1 : 0, std::memory_order_relaxed);
}

std::string format_lines(Level level, std::string_view text, bool journal) {
  while (!text.empty() && text.back() == '\n')
    text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() + 8);
  const char prefix[] = {'<', static_cast<char>('0' + static_cast<int>(level)), '>'};
  for (;;) {
    const auto nl = text.find('\n');
    if (journal) out.append(prefix, sizeof prefix);
    out.append(text.substr(0, nl));
    out += '\n';
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

void write(Level level, std::string_view text) {
  const std::string line = format_lines(level, text, to_journal());
  std::string_view left = line;
  while (!left.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report it
    left.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace hg::resolver::log
