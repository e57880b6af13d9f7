// resolver/log.h: the journal's priority prefix, and when it applies.
#include "resolver/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace hg::resolver::log {
namespace {

TEST(Log, JournalLinesStartWithTheirPriorityAndCarryNoTimestamp) {
  EXPECT_EQ(format_lines(Level::Error, "hourglassd: cannot bind", true),
            "<3>hourglassd: cannot bind\n");
  EXPECT_EQ(format_lines(Level::Warning, "warning: x", true), "<4>warning: x\n");
  EXPECT_EQ(format_lines(Level::Notice, "note", true), "<5>note\n");
  EXPECT_EQ(format_lines(Level::Info, "query a. A NOERROR hit 0.1ms", true),
            "<6>query a. A NOERROR hit 0.1ms\n");
  // Each line of a multi-line message gets its own prefix (journald reads line by line).
  EXPECT_EQ(format_lines(Level::Warning, "one\ntwo\n", true), "<4>one\n<4>two\n");
}

TEST(Log, TerminalLinesAreWrittenAsTheyAre) {
  EXPECT_EQ(format_lines(Level::Error, "hourglassd: cannot bind", false),
            "hourglassd: cannot bind\n");
  EXPECT_EQ(format_lines(Level::Info, "one\ntwo", false), "one\ntwo\n");
}

TEST(Log, JournalStreamMustNameTheFileDescriptorsDeviceAndInode) {
  char path[] = "/tmp/hg-log-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  struct stat st = {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const std::string good = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(journal_stream_matches(good.c_str(), fd));
  // Another file's inode (the variable inherited by a process whose stderr was redirected).
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  EXPECT_FALSE(journal_stream_matches(other.c_str(), fd));
  EXPECT_FALSE(journal_stream_matches(nullptr, fd));
  for (const char* bad :
       {"", ":", "1", "1:", ":1", "a:b", "1:2:3", "-1:5", "99999999999999999999999:1"})
    EXPECT_FALSE(journal_stream_matches(bad, fd)) << bad;
  EXPECT_FALSE(journal_stream_matches(good.c_str(), -1));
  ::close(fd);
  ::unlink(path);
}

}  // namespace
}  // namespace hg::resolver::log
