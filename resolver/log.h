// log: the daemon's messages on standard error, one line each, written with one write(2) so
// lines from several threads never interleave.
//
// Under systemd, standard error is a stream to the journal and the service manager says so
// in JOURNAL_STREAM ("DEVICE:INODE" of that stream, see sd-daemon(3) and systemd.exec(5)).
// When that matches what fd 2 is, every line starts with its syslog priority, "<3>" (error)
// to "<6>" (info), which journald strips and stores as the entry's PRIORITY, so that
// `journalctl -p warning` filters them; the journal stamps the time, so the line carries
// none. Anywhere else (a terminal, a file, a pipe that merely inherited JOURNAL_STREAM) the
// lines are written as they are.
#pragma once

#include <fmt/core.h>

#include <string_view>
#include <utility>

namespace hg::resolver::log {

/// syslog priorities (RFC 5424 severities) as sd-daemon(3) writes them.
enum class Level { Error = 3, Warning = 4, Notice = 5, Info = 6 };

/// True when JOURNAL_STREAM's "DEVICE:INODE" (decimal, as systemd writes it) names the file
/// `fd` is open on. Exposed for tests; `env` may be null.
bool journal_stream_matches(const char* env, int fd);

/// Whether lines get a priority prefix: decided from the environment on first use and kept
/// (set_journal() overrides it, for tests).
bool to_journal();
void set_journal(bool on);

/// `text` as the line(s) written for `level`: each line of `text` prefixed with "<N>" when
/// `journal`, and a final newline. Exposed for tests.
std::string format_lines(Level level, std::string_view text, bool journal);

/// Writes `text` (no trailing newline needed) to fd 2.
void write(Level level, std::string_view text);

template <class... Args>
void print(Level level, fmt::format_string<Args...> format, Args&&... args) {
  write(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace hg::resolver::log
