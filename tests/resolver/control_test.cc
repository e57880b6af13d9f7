// Control: the control socket driven over a real unix socket in a temporary directory, with
// the event loop run from the test (run_once) on a test clock — no daemon, no sleeping.
#include "resolver/ops/control.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "cache/key.h"
#include "tests/resolver/cached_answers.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::test::Bytes;
using wire::test::PacketBuilder;

/// A non-blocking client of a unix stream socket.
class UnixClient {
 public:
  explicit UnixClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, path.data(), path.size());
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sun), sizeof sun) == 0;
  }
  ~UnixClient() { ::close(fd_); }
  UnixClient(const UnixClient&) = delete;
  UnixClient& operator=(const UnixClient&) = delete;

  bool connected() const { return connected_; }
  bool send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  /// Takes whatever has arrived; sets eof when the server closed the connection.
  void receive() {
    if (test::read_available(fd_, data)) eof = true;
  }

  std::string data;
  bool eof = false;

 private:
  int fd_ = -1;
  bool connected_ = false;
};

/// Position one past the empty line that ends the reply starting at `from`, if complete.
std::optional<std::size_t> reply_end(const std::string& s, std::size_t from) {
  if (s.size() > from && s[from] == '\n') return from + 1;  // an empty reply
  const auto p = s.find("\n\n", from);
  if (p == std::string::npos) return std::nullopt;
  return p + 2;
}

class ControlTest : public ::testing::Test {
 protected:
  ControlTest() : loop_(EventLoop::Options{.clock = [this] { return now_; }}), shared_(Config{}) {
    path_ = dir_.file("control");
    loop_.run_once(Millis{0});
  }
  ~ControlTest() override { control_.reset(); }

  void open() {
    auto c = Control::open(loop_, shared_, path_);
    ASSERT_TRUE(c) << c.error();
    control_ = std::move(c.value());
  }

  /// Runs the loop until `done` or a bound (at most ~2 s of real time).
  template <class Pred>
  void pump(UnixClient& client, Pred done) {
    for (int i = 0; i < 400 && !done(); ++i) {
      loop_.run_once(Millis{5});
      client.receive();
      if (client.eof) break;
    }
  }

  /// Sends one request line and returns its reply without the terminating empty line.
  std::string ask(UnixClient& client, std::string_view line) {
    const std::size_t from = client.data.size();
    EXPECT_TRUE(client.send(std::string(line) + "\n"));
    pump(client, [&] { return reply_end(client.data, from).has_value(); });
    const auto end = reply_end(client.data, from);
    EXPECT_TRUE(end) << "no complete reply to '" << line << "', got: " << client.data.substr(from);
    if (!end) return {};
    return client.data.substr(from, *end - from - 1);
  }
  std::string ask(std::string_view line) {
    UnixClient client(path_);
    EXPECT_TRUE(client.connected());
    return ask(client, line);
  }

  void advance(Millis d) {
    now_ += d;
    loop_.run_once(Millis{0});
  }

  /// Caches an A answer for `name` with one record per TTL given.
  void insert_a(std::string_view name, std::initializer_list<uint32_t> ttls,
                bool dnssec_ok = false) {
    insert(name, a_response(name, ttls), dnssec_ok);
  }
  void insert(std::string_view name, const Bytes& response, bool dnssec_ok = false) {
    cache_answer(shared_.cache, name, response, now_, dnssec_ok);
  }

  MonoTime now_{Millis{50'000'000}};
  EventLoop loop_;
  Shared shared_;
  test::TempDir dir_{"hg-control-test"};
  std::string path_;
  std::unique_ptr<Control> control_;
};

TEST_F(ControlTest, StatsReportCacheAndServerCountersAndInflight) {
  open();
  insert_a("www.example.com", {300});
  insert_a("mail.example.com", {300});
  shared_.stats.queries_udp = 5;
  shared_.stats.coalesced = 2;
  const std::string r = ask("stats");
  EXPECT_NE(r.find("cache.entries 2\n"), std::string::npos) << r;
  EXPECT_NE(r.find("cache.inserts 2\n"), std::string::npos) << r;
  EXPECT_NE(r.find(fmt::format("cache.capacity_bytes {}\n", Config{}.cache_size)),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("server.queries_udp 5\n"), std::string::npos) << r;
  EXPECT_NE(r.find("server.coalesced 2\n"), std::string::npos) << r;
  EXPECT_NE(r.find("inflight.queries 0\n"), std::string::npos) << r;
  EXPECT_NE(r.find("cache.failure_entries 0\n"), std::string::npos) << r;
}

TEST_F(ControlTest, DumpShowsEachRecordWithItsTtlCountedDownByTheLoopClock) {
  open();
  insert_a("www.example.com", {300, 60});
  advance(Millis{2500});
  const std::string r = ask("dump");
  EXPECT_NE(r.find("; www.example.com. IN A NOERROR fresh, expires in 57s\n"), std::string::npos)
      << r;
  EXPECT_NE(r.find("www.example.com.\t298\tIN\tA\t192.0.2.1\n"), std::string::npos) << r;
  EXPECT_NE(r.find("www.example.com.\t58\tIN\tA\t192.0.2.2\n"), std::string::npos) << r;
  EXPECT_NE(r.find("; 1 entry\n"), std::string::npos) << r;
}

TEST_F(ControlTest, DumpMarksExpiredEntriesStaleWithTheirServableWindow) {
  open();
  insert_a("old.example.com", {10});
  advance(Millis{15'000});
  const std::string r = ask("dump");
  EXPECT_NE(r.find("; old.example.com. IN A NOERROR stale, expired 5s ago, servable stale for "
                   "86395s more\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("old.example.com.\t0\tIN\tA\t192.0.2.1\n"), std::string::npos) << r;
}

TEST_F(ControlTest, DumpOfOneNameListsOnlyItsEntriesAndShowsFlags) {
  open();
  insert_a("www.example.com", {300});
  insert_a("www.example.com", {300}, /*dnssec_ok=*/true);
  insert_a("other.example.com", {300});
  const std::string r = ask("dump WWW.example.com");
  EXPECT_EQ(r.find("other.example.com"), std::string::npos) << r;
  EXPECT_NE(r.find("; www.example.com. IN A do NOERROR"), std::string::npos) << r;
  EXPECT_NE(r.find("; 2 entries for www.example.com.\n"), std::string::npos) << r;
}

TEST_F(ControlTest, LargeDumpIsStreamedCompletely) {
  open();
  for (int i = 0; i < 1500; ++i)
    insert_a(fmt::format("host{}.example.com", i), {300});
  UnixClient client(path_);
  const std::string r = ask(client, "dump");
  EXPECT_NE(r.find("; 1500 entries\n"), std::string::npos)
      << r.substr(r.size() > 200 ? r.size() - 200 : 0);
  EXPECT_NE(r.find("host1499.example.com.\t300\tIN\tA\t192.0.2.1\n"), std::string::npos);
  // The connection still takes requests after a chunked reply.
  EXPECT_NE(ask(client, "ttl-caps").find("; no ttl caps"), std::string::npos);
}

TEST_F(ControlTest, FlushNameZoneAndAllReportHowManyWereRemoved) {
  open();
  insert_a("www.example.com", {300});
  insert_a("www.example.com", {300}, /*dnssec_ok=*/true);
  insert_a("a.shop.example.com", {300});
  insert_a("b.shop.example.com", {300});
  insert_a("www.example.org", {300});
  EXPECT_EQ(ask("flush www.example.com"), "flushed 2\n");
  EXPECT_EQ(ask("flush www.example.com"), "flushed 0\n");
  EXPECT_EQ(ask("flush-zone shop.example.com"), "flushed 2\n");
  EXPECT_EQ(shared_.cache.stats().entries, 1u);
  EXPECT_EQ(ask("flush"), "flushed 1\n");
  EXPECT_EQ(shared_.cache.stats().entries, 0u);
}

TEST_F(ControlTest, TtlCapShortensCachedAnswersAndCanBeListedAndCleared) {
  open();
  insert_a("www.shop.example.com", {3600});
  EXPECT_EQ(ask("ttl-caps"), "; no ttl caps\n");
  EXPECT_EQ(ask("ttl-cap Shop.Example.com 60"), "ok: ttl-cap shop.example.com. 60\n");
  EXPECT_EQ(ask("ttl-caps"), "shop.example.com. 60\n");
  const std::string r = ask("dump");
  EXPECT_NE(r.find("www.shop.example.com.\t60\tIN\tA"), std::string::npos) << r;
  EXPECT_EQ(ask("ttl-cap shop.example.com 5m"), "ok: ttl-cap shop.example.com. 300\n");
  EXPECT_EQ(ask("ttl-cap-clear shop.example.com"), "ok: ttl-cap-clear shop.example.com.\n");
  EXPECT_EQ(ask("ttl-cap-clear shop.example.com"),
            "error: no ttl-cap for shop.example.com.; see ttl-caps\n");
  EXPECT_EQ(ask("ttl-caps"), "; no ttl caps\n");
}

TEST_F(ControlTest, BadRequestsGetOneErrorLineNamingTheProblem) {
  open();
  EXPECT_EQ(ask("frobnicate now"), "error: unknown command 'frobnicate'; try 'help'\n");
  EXPECT_EQ(ask("flush-zone"), "error: usage: flush-zone ZONE\n");
  EXPECT_EQ(ask("ttl-cap example.com"), "error: usage: ttl-cap ZONE SECONDS\n");
  EXPECT_EQ(ask("ttl-cap example.com soon"),
            "error: 'soon' is not a TTL: expected seconds from 0 to 2147483647 (or 30s, 5m, 1h, "
            "1d)\n");
  const std::string bad = ask("flush a..b");
  EXPECT_TRUE(bad.starts_with("error: 'a..b' is not a domain name")) << bad;
  EXPECT_EQ(bad.find('\n'), bad.size() - 1) << "one line: " << bad;
  EXPECT_EQ(ask(""), "error: empty request; try 'help'\n");
  EXPECT_EQ(ask("stats now"), "error: usage: stats (no arguments)\n");
}

TEST_F(ControlTest, HelpListsEveryCommand) {
  open();
  const std::string r = ask("help\r");  // a CR before the LF is ignored
  for (const char* cmd :
       {"stats", "dump", "flush", "flush-zone", "ttl-cap ", "ttl-cap-clear", "ttl-caps", "help"})
    EXPECT_NE(r.find(cmd), std::string::npos) << cmd;
}

TEST_F(ControlTest, PipelinedRequestsAreAnsweredInOrder) {
  open();
  UnixClient client(path_);
  ASSERT_TRUE(client.send("flush\nttl-caps\nbogus\n"));
  pump(client, [&] {
    return client.data.find("error:") != std::string::npos && client.data.ends_with("\n\n");
  });
  EXPECT_EQ(client.data,
            "flushed 0\n\n; no ttl caps\n\nerror: unknown command 'bogus'; try 'help'\n\n");
}

TEST_F(ControlTest, OverlongLineGetsAnErrorAndTheConnectionIsClosed) {
  open();
  UnixClient client(path_);
  ASSERT_TRUE(client.send(std::string(5000, 'x')));
  pump(client, [&] { return client.eof; });
  EXPECT_EQ(client.data, "error: request line longer than 4095 bytes\n\n");
  EXPECT_TRUE(client.eof);
  EXPECT_EQ(control_->connections(), 0u);
}

TEST_F(ControlTest, IdleConnectionIsClosedAfterTheTimeout) {
  open();
  UnixClient client(path_);
  ASSERT_EQ(ask(client, "flush"), "flushed 0\n");
  EXPECT_EQ(control_->connections(), 1u);
  advance(Millis{29'000});
  client.receive();
  EXPECT_FALSE(client.eof);
  advance(Millis{2'000});
  advance(Millis{0});
  client.receive();
  EXPECT_TRUE(client.eof);
  EXPECT_EQ(control_->connections(), 0u);
}

TEST_F(ControlTest, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  open();
  std::vector<std::unique_ptr<UnixClient>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<UnixClient>(path_));
    loop_.run_once(Millis{5});
  }
  for (int i = 0; i < 5 && control_->connections() < 16; ++i)
    loop_.run_once(Millis{5});
  EXPECT_EQ(control_->connections(), 16u);
  UnixClient extra(path_);
  pump(extra, [&] { return extra.eof; });
  EXPECT_TRUE(extra.eof);
  EXPECT_EQ(ask(*clients[15], "flush"), "flushed 0\n");
}

TEST_F(ControlTest, SocketHasMode0660AndIsRemovedOnDestruction) {
  open();
  struct stat st = {};
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  control_.reset();
  EXPECT_NE(::lstat(path_.c_str(), &st), 0);
}

TEST_F(ControlTest, StaleSocketFileIsReplaced) {
  {
    // A socket file whose listener is gone, as a crashed daemon leaves it.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, path_.data(), path_.size());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    ::close(fd);
  }
  open();
  EXPECT_EQ(ask("flush"), "flushed 0\n");
}

TEST_F(ControlTest, RefusesToStartWhileAnotherProcessListens) {
  open();
  auto second = Control::open(loop_, shared_, path_);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().find("another process"), std::string::npos) << second.error();
  EXPECT_NE(second.error().find(path_), std::string::npos) << second.error();
  EXPECT_EQ(ask("flush"), "flushed 0\n") << "the first one must still work";
}

TEST_F(ControlTest, RefusesToReplaceAFileThatIsNotASocket) {
  std::ofstream(path_) << "precious\n";
  auto c = Control::open(loop_, shared_, path_);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("not a socket"), std::string::npos) << c.error();
  std::ifstream in(path_);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "precious");
}

TEST_F(ControlTest, MissingDirectoryIsAClearStartError) {
  auto c = Control::open(loop_, shared_, dir_.file("no/such/dir/control"));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("does its directory exist?"), std::string::npos) << c.error();
}

}  // namespace
}  // namespace hg::resolver
