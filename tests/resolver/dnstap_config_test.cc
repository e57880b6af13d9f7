// --dnstap and --dnstap-identity: values stored from flags and TOML, every bad value an error
// line naming the flag, the value and what is allowed; the SIGHUP re-read of the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "resolver/config.h"
#include "resolver/tap/dnstap_writer.h"
#include "tests/resolver/parse_args.h"
#include "tests/support/temp_dir.h"

namespace hg::resolver {
namespace {

using ::testing::HasSubstr;

class DnstapConfig : public ::testing::Test {
 protected:
  std::string file(const std::string& name, std::string_view contents) {
    return dir_.write(name, contents);
  }

  static std::variant<Config, ConfigExit> parse(std::vector<std::string> args) {
    args.insert(args.begin(), {"--upstream", "192.0.2.1"});
    return parse_args(std::move(args));
  }
  static std::string error(std::vector<std::string> args) {
    auto r = parse(std::move(args));
    auto* e = std::get_if<ConfigExit>(&r);
    if (e == nullptr) {
      ADD_FAILURE() << "expected an error";
      return {};
    }
    EXPECT_EQ(e->exit_code, 2);
    EXPECT_EQ(e->message.find('\n'), std::string::npos) << "one line: " << e->message;
    return e->message;
  }

  test::TempDir dir_{"hg-dnstap-cfg"};
};

TEST_F(DnstapConfig, OffByDefault) {
  auto r = parse({});
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_TRUE(std::get<Config>(r).dnstap.empty());
  EXPECT_TRUE(std::get<Config>(r).dnstap_identity.empty());
  EXPECT_EQ(to_toml(std::get<Config>(r)).find("dnstap"), std::string::npos);
}

TEST_F(DnstapConfig, FlagsAreStored) {
  const std::string path = dir_.file("out.dnstap");
  auto r = parse({"--dnstap", path, "--dnstap-identity", "ns1.example"});
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  const Config& c = std::get<Config>(r);
  EXPECT_EQ(c.dnstap, path);
  EXPECT_EQ(c.dnstap_identity, "ns1.example");
  EXPECT_TRUE(c.dnstap_from_cli);
  EXPECT_TRUE(c.dnstap_identity_from_cli);

  auto u = parse({"--dnstap", "unix:" + dir_.file("tap.sock")});
  ASSERT_TRUE(std::holds_alternative<Config>(u));
  EXPECT_EQ(std::get<Config>(u).dnstap, "unix:" + dir_.file("tap.sock"));
}

TEST_F(DnstapConfig, BadValuesNameTheFlagAndWhatIsAllowed) {
  std::string e = error({"--dnstap", ""});
  EXPECT_THAT(e, HasSubstr("--dnstap \"\""));
  EXPECT_THAT(e, HasSubstr("unix:PATH"));

  e = error({"--dnstap", "/nonexistent-hg-dir/out.dnstap"});
  EXPECT_THAT(e, HasSubstr("--dnstap \"/nonexistent-hg-dir/out.dnstap\""));
  EXPECT_THAT(e, HasSubstr("the directory \"/nonexistent-hg-dir\" does not exist"));

  e = error({"--dnstap", dir_.path()});
  EXPECT_THAT(e, HasSubstr("this is a directory"));

  e = error({"--dnstap", "unix:"});
  EXPECT_THAT(e, HasSubstr("--dnstap \"unix:\""));
  EXPECT_THAT(e, HasSubstr("1 to 107 bytes"));

  e = error({"--dnstap", "unix:/" + std::string(120, 'x')});
  EXPECT_THAT(e, HasSubstr("1 to 107 bytes"));

  e = error({"--dnstap-identity", ""});
  EXPECT_THAT(e, HasSubstr("--dnstap-identity \"\": expected a name of 1 to 255 bytes"));
  e = error({"--dnstap-identity", std::string(256, 'a')});
  EXPECT_THAT(e, HasSubstr("1 to 255 bytes"));
}

TEST_F(DnstapConfig, TomlKeysAndRoundTrip) {
  const std::string out = dir_.file("from-file.dnstap");
  const std::string cfg =
      file("hg.toml", "dnstap = \"" + out + "\"\ndnstap-identity = \"resolver-7\"\n");
  auto r = parse({"--config", cfg});
  ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<ConfigExit>(r).message;
  const Config& c = std::get<Config>(r);
  EXPECT_EQ(c.dnstap, out);
  EXPECT_EQ(c.dnstap_identity, "resolver-7");
  EXPECT_FALSE(c.dnstap_from_cli);

  // to_toml writes the keys back, and the result reads to the same values.
  const std::string again = file("again.toml", to_toml(c));
  auto r2 = parse({"--config", again});
  ASSERT_TRUE(std::holds_alternative<Config>(r2)) << std::get<ConfigExit>(r2).message;
  EXPECT_EQ(std::get<Config>(r2).dnstap, out);
  EXPECT_EQ(std::get<Config>(r2).dnstap_identity, "resolver-7");

  // A bad value in the file names the file and the key.
  const std::string bad = file("bad.toml", "dnstap = \"unix:\"\n");
  auto r3 = parse({"--config", bad});
  ASSERT_TRUE(std::holds_alternative<ConfigExit>(r3));
  EXPECT_THAT(std::get<ConfigExit>(r3).message, HasSubstr(bad + ":1: dnstap = \"unix:\""));
}

TEST_F(DnstapConfig, RereadTakesTheFileButKeepsCommandLineValues) {
  const std::string a = dir_.file("a.dnstap");
  const std::string b = dir_.file("b.dnstap");
  const std::string cfg = file("hg.toml", "dnstap = \"" + a + "\"\ndnstap-identity = \"one\"\n");
  auto r = parse({"--config", cfg, "--dnstap-identity", "cli-name"});
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  const Config c = std::get<Config>(r);
  EXPECT_EQ(c.dnstap, a);
  EXPECT_EQ(c.dnstap_identity, "cli-name");

  std::ofstream(cfg) << "dnstap = \"" << b << "\"\ndnstap-identity = \"two\"\n";
  auto s = reread_dnstap_settings(c);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->first, b);            // from the file now
  EXPECT_EQ(s->second, "cli-name");  // the command line still wins

  std::ofstream(cfg) << "dnstap = \"\"\n";
  auto bad = reread_dnstap_settings(c);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error(), HasSubstr("dnstap = \"\""));

  // Dropping the key from the file turns dnstap off.
  std::ofstream(cfg) << "threads = 1\n";
  auto off = reread_dnstap_settings(c);
  ASSERT_TRUE(off) << off.error();
  EXPECT_TRUE(off->first.empty());
}

// SIGHUP re-reads the dnstap keys only: a bad value elsewhere in the file is the problem of
// the setting it belongs to (reported by its own reload), not a dnstap problem.
TEST_F(DnstapConfig, RereadIgnoresABadValueOfAnotherKey) {
  const std::string a = dir_.file("a.dnstap");
  const std::string cfg = file("hg.toml", "dnstap = \"" + a + "\"\n");
  auto r = parse({"--config", cfg});
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  const Config c = std::get<Config>(r);
  std::ofstream(cfg) << "dnstap = \"" << a << "\"\nshadow-ttl = [\"a.test=forever\"]\n";
  auto s = reread_dnstap_settings(c);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->first, a);
  auto shadow = read_shadow_ttls(cfg);
  ASSERT_FALSE(shadow);
  EXPECT_THAT(shadow.error(), HasSubstr("shadow-ttl = \"a.test=forever\""));
}

// Client addresses and names: the file is 0600 whatever the umask, and an older file's
// looser mode is tightened (one others may write is refused); a symbolic link or a FIFO at the path
// is refused, and what the link points at is not truncated.
TEST_F(DnstapConfig, TheFileIs0600AndNeverALinkOrAFifo) {
  DnstapCounters counters;
  DnstapWriter::Options o;
  o.target = dir_.file("new.dnstap");
  const mode_t old_mask = ::umask(0);
  {
    auto w = DnstapWriter::open(o, counters);
    ASSERT_TRUE(w) << w.error();
  }
  const std::string older = file("older.dnstap", "x");
  ASSERT_EQ(::chmod(older.c_str(), 0644), 0);
  {
    DnstapWriter::Options o2 = o;
    o2.target = older;
    auto w = DnstapWriter::open(o2, counters);
    ASSERT_TRUE(w) << w.error();
  }
  // One others may write is refused and left as it is: whoever opened it for reading and
  // writing before would read the query log (base/checked_open.h).
  const std::string open_to_all = file("open.dnstap", "theirs");
  ASSERT_EQ(::chmod(open_to_all.c_str(), 0666), 0);
  {
    DnstapWriter::Options o3 = o;
    o3.target = open_to_all;
    auto w = DnstapWriter::open(o3, counters);
    ASSERT_FALSE(w);
    EXPECT_THAT(w.error(), HasSubstr("is writable by every user (mode 0666)"));
    std::ifstream in(open_to_all);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "theirs");
  }
  ::umask(old_mask);
  for (const std::string& p : {o.target, older}) {
    struct stat st = {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << p;
  }

  const std::string victim = file("victim", "precious");
  const std::string link = dir_.file("link.dnstap");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  o.target = link;
  auto w = DnstapWriter::open(o, counters);
  ASSERT_FALSE(w);
  EXPECT_THAT(w.error(), HasSubstr("symbolic link"));
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");

  const std::string fifo = dir_.file("fifo.dnstap");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  o.target = fifo;
  auto f = DnstapWriter::open(o, counters);  // returns at once: O_NONBLOCK, no reader
  ASSERT_FALSE(f);
  EXPECT_THAT(f.error(), HasSubstr("--dnstap \"" + fifo + "\""));
}

TEST_F(DnstapConfig, WriterReportsAFileItCannotCreate) {
  DnstapCounters counters;
  DnstapWriter::Options o;
  o.target = dir_.file("no-such-dir/x.dnstap");
  auto w = DnstapWriter::open(o, counters);
  ASSERT_FALSE(w);
  EXPECT_THAT(w.error(), HasSubstr("--dnstap \"" + o.target + "\": cannot create the file"));
}

}  // namespace
}  // namespace hg::resolver
