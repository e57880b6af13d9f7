// HostsTable (resolver/query/hosts_table.h): a hosts file's names and addresses in compact form,
// and the answers Routing gives from it — the same as from the per-name records it replaced:
// every address of a name (aliases too) once in file order, PTR of the first canonical name per
// address, NODATA for the other family and other types, the first file's line as the source.
#include "resolver/query/hosts_table.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "resolver/query/local_names.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"

namespace hg::resolver {
namespace {

using wire::RCode;
using wire::RRType;
using wire::test::Bytes;
using wire::test::PacketBuilder;

std::shared_ptr<const HostsTable> table(std::string_view text, std::string path = "/h") {
  std::vector<std::string> errors;
  return HostsTable::parse(std::move(path), text, errors);
}

std::shared_ptr<const Routing> routing(std::vector<std::shared_ptr<const HostsTable>> tables) {
  Routing::Input in;
  in.tables = std::move(tables);
  auto r = Routing::build(in);
  EXPECT_TRUE(r.has_value());
  return r.value();
}

std::vector<uint8_t> lw(std::string_view text) {
  const wire::Name name = wire::Name::from_text(text).value().lowercased();
  const auto w = name.wire();  // a view into `name`, which must outlive it
  return {w.begin(), w.end()};
}

struct Answer {
  RCode rcode = RCode::ServFail;
  bool aa = false;
  RouteKind kind = RouteKind::Upstream;
  std::vector<std::string> data;  // "A 1.2.3.4", "AAAA ::1", "PTR name."
};

Answer ask(const Routing& r, std::string_view name, RRType type) {
  PacketBuilder b;
  b.id(0x1111).flags(0x0100).question(name, static_cast<uint16_t>(type)).opt(1232);
  const Bytes q = b.build();
  wire::Message scratch;
  ClientQuery cq;
  std::vector<uint8_t> err(512);
  EXPECT_EQ(admit_query(q, true, scratch, cq, err).action, Admission::Resolve);
  Answer out;
  const auto m = r.route(*cq.qname, cq.qtype);
  out.kind = m.kind;
  if (m.kind == RouteKind::Upstream || m.kind == RouteKind::Forward) return out;
  std::vector<uint8_t> bytes(1232);
  const std::size_t n = r.answer(m, cq, bytes, bytes.size(), out.rcode);
  bytes.resize(n);
  wire::Message msg;
  EXPECT_TRUE(msg.parse(bytes, wire::ParseMode::Strict).has_value()) << name;
  out.aa = msg.header().has(wire::flag::AA);
  for (const auto& rv : msg.section(wire::Section::Answer)) {
    const std::span<const uint8_t> rd(bytes.data() + rv.rdata_offset, rv.rdlength);
    char buf[INET6_ADDRSTRLEN] = {};
    if (rv.type == RRType::A) {
      ::inet_ntop(AF_INET, rd.data(), buf, sizeof buf);
      out.data.push_back(std::string("A ") + buf);
    } else if (rv.type == RRType::AAAA) {
      ::inet_ntop(AF_INET6, rd.data(), buf, sizeof buf);
      out.data.push_back(std::string("AAAA ") + buf);
    } else if (rv.type == RRType::PTR) {
      wire::WireReader rdr(bytes);
      EXPECT_TRUE(rdr.seek(rv.rdata_offset).has_value());
      out.data.push_back("PTR " + wire::read_name(rdr).value().to_text());
    }
  }
  return out;
}

using V = std::vector<std::string>;

TEST(HostsTable, NamesAliasesAndAddressesOnceInFileOrder) {
  auto t = table(
      "192.0.2.1 Web.Example www.example\n"
      "192.0.2.2 web.example\n"
      "2001:db8::1 web.example\n"
      "192.0.2.1 WEB.example\n"  // again: kept once
      "0.0.0.0 ads.example tracker.example\n");
  EXPECT_EQ(t->names(), 4u);
  EXPECT_EQ(t->addresses(), 4u);
  const uint32_t e = t->find(lw("web.example"));
  ASSERT_NE(e, HostsTable::kNone);
  EXPECT_EQ(t->line(e), 1u);
  ASSERT_EQ(t->address_ids(e).size(), 3u);
  EXPECT_EQ(t->address(t->address_ids(e)[0]).size(), 4u);
  EXPECT_EQ(t->address(t->address_ids(e)[1])[3], 2);
  EXPECT_EQ(t->address(t->address_ids(e)[2]).size(), 16u);
  EXPECT_EQ(t->find(lw("nothere.example")), HostsTable::kNone);
  EXPECT_EQ(t->find(lw("example")), HostsTable::kNone);
  const uint32_t ads = t->find(lw("tracker.example"));
  ASSERT_NE(ads, HostsTable::kNone);
  EXPECT_EQ(t->line(ads), 5u);
  ASSERT_EQ(t->address_ids(ads).size(), 1u);
  // The PTR: the first line's canonical name, as written.
  const uint8_t a1[4] = {192, 0, 2, 1};
  const uint32_t id = t->find_address(a1);
  ASSERT_NE(id, HostsTable::kNone);
  EXPECT_EQ(t->ptr(id).to_text(), "Web.Example.");
  EXPECT_TRUE(t->ptr(id).identical(wire::Name::from_text("Web.Example").value()));
  EXPECT_EQ(t->address_line(id), 1u);
}

TEST(HostsTable, AnswersAreTheSameAsTheRecordsPerNameGave) {
  auto r =
      routing({table("192.0.2.1 web.example www\n"
                     "192.0.2.2 web.example\n"
                     "2001:db8::1 web.example\n"
                     "192.0.2.9 v4only.example\n"
                     "2001:db8::9 v6only.example\n"
                     "192.0.2.1 second.example\n")});
  EXPECT_EQ(ask(*r, "WEB.example", RRType::A).data, (V{"A 192.0.2.1", "A 192.0.2.2"}));
  EXPECT_EQ(ask(*r, "web.example", RRType::AAAA).data, (V{"AAAA 2001:db8::1"}));
  EXPECT_EQ(ask(*r, "web.example", RRType::ANY).data,
            (V{"A 192.0.2.1", "A 192.0.2.2", "AAAA 2001:db8::1"}));
  EXPECT_EQ(ask(*r, "www", RRType::A).data, (V{"A 192.0.2.1"}));
  // The other family and other types: NODATA, authoritative.
  auto nodata = ask(*r, "v4only.example", RRType::AAAA);
  EXPECT_EQ(nodata.kind, RouteKind::Hosts);
  EXPECT_EQ(nodata.rcode, RCode::NoError);
  EXPECT_TRUE(nodata.aa);
  EXPECT_TRUE(nodata.data.empty());
  EXPECT_TRUE(ask(*r, "v6only.example", RRType::A).data.empty());
  EXPECT_TRUE(ask(*r, "web.example", RRType::MX).data.empty());
  EXPECT_EQ(ask(*r, "web.example", RRType::MX).rcode, RCode::NoError);
  // PTR: the first canonical name for the address; later names for it are not PTRs.
  EXPECT_EQ(ask(*r, "1.2.0.192.in-addr.arpa", RRType::PTR).data, (V{"PTR web.example."}));
  EXPECT_EQ(ask(*r, "9.2.0.192.IN-ADDR.ARPA", RRType::PTR).data, (V{"PTR v4only.example."}));
  EXPECT_EQ(ask(*r, "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa",
                RRType::PTR)
                .data,
            (V{"PTR web.example."}));
  // A reverse name the table does not know, or not in reverse_name's form, is not hosts'.
  EXPECT_NE(ask(*r, "3.2.0.192.in-addr.arpa", RRType::PTR).kind, RouteKind::Hosts);
  EXPECT_NE(ask(*r, "01.2.0.192.in-addr.arpa", RRType::PTR).kind, RouteKind::Hosts);
  EXPECT_NE(ask(*r, "1.1.2.0.192.in-addr.arpa", RRType::PTR).kind, RouteKind::Hosts);
  EXPECT_NE(ask(*r, "nothere.example", RRType::A).kind, RouteKind::Hosts);
  // A reverse name asked for A: NODATA (the name exists here).
  auto a_of_rev = ask(*r, "1.2.0.192.in-addr.arpa", RRType::A);
  EXPECT_EQ(a_of_rev.kind, RouteKind::Hosts);
  EXPECT_TRUE(a_of_rev.data.empty());
}

TEST(HostsTable, SeveralFilesMergeAddressesTheFirstGivesSourceAndPtr) {
  auto r =
      routing({table("192.0.2.1 a.example\n# x\n192.0.2.5 five.example\n", "/one"),
               table("192.0.2.1 b.example\n192.0.2.2 a.example\n192.0.2.1 a.example\n", "/two")});
  EXPECT_EQ(ask(*r, "a.example", RRType::A).data, (V{"A 192.0.2.1", "A 192.0.2.2"}));
  EXPECT_EQ(ask(*r, "b.example", RRType::A).data, (V{"A 192.0.2.1"}));
  EXPECT_EQ(ask(*r, "1.2.0.192.in-addr.arpa", RRType::PTR).data, (V{"PTR a.example."}));
  EXPECT_EQ(ask(*r, "2.2.0.192.in-addr.arpa", RRType::PTR).data, (V{"PTR a.example."}));
  const auto name = [](std::string_view n) { return wire::Name::from_text(n).value(); };
  EXPECT_EQ(r->describe(name("a.example"), {}),
            "a.example. hosts /one:1 ttl 5: A 192.0.2.1 A 192.0.2.2; other types NODATA\n");
  EXPECT_EQ(r->describe(name("5.2.0.192.in-addr.arpa"), {}),
            "5.2.0.192.in-addr.arpa. hosts /one:3 ttl 5: PTR five.example.; other types "
            "NODATA\n");
  EXPECT_EQ(r->hosts_names(), 4u);  // per file: a, five; b, a
}

TEST(HostsTable, LocalhostNamesStayLoopbackAndTheLoopbackPtrFollowsTheFile) {
  auto r =
      routing({table("192.0.2.7 localhost foo.localhost seven.example\n"
                     "127.0.0.1 myhost\n")});
  EXPECT_EQ(ask(*r, "localhost", RRType::A).data, (V{"A 127.0.0.1"}));
  EXPECT_EQ(ask(*r, "foo.localhost", RRType::A).data, (V{"A 127.0.0.1"}));
  EXPECT_EQ(ask(*r, "seven.example", RRType::A).data, (V{"A 192.0.2.7"}));
  // The canonical name is the PTR even when it is localhost (as before).
  EXPECT_EQ(ask(*r, "7.2.0.192.in-addr.arpa", RRType::PTR).data, (V{"PTR localhost."}));
  // The file's name for 127.0.0.1 replaces the built-in one; ::1 keeps localhost.
  EXPECT_EQ(ask(*r, "1.0.0.127.in-addr.arpa", RRType::PTR).data, (V{"PTR myhost."}));
  EXPECT_EQ(ask(*r, "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa",
                RRType::PTR)
                .data,
            (V{"PTR localhost."}));
}

TEST(HostsTable, MoreThanTheLimitOfAddressesPerNameIsCutAndSaid) {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + " many.example\n";
  std::vector<std::string> errors;
  auto t = HostsTable::parse("/h", text, errors);
  const uint32_t e = t->find(lw("many.example"));
  ASSERT_NE(e, HostsTable::kNone);
  EXPECT_EQ(t->address_ids(e).size(), kMaxHostsAddressesPerName);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("many.example.: more than 256 addresses"), std::string::npos)
      << errors[0];
}

TEST(HostsTable, HostileLinesAreSkippedWithOneClearErrorEach) {
  std::string text = "192.0.2.1 ok.example\n";
  text += std::string("192.0.2.2\0 nul.example\n", 23);                // NUL in the address
  text += std::string("192.0.2.3 nul\0name.example\n", 27);            // NUL in a name
  text += "192.0.2.4 " + std::string(300, 'x') + ".example\n";         // label too long
  text += "192.0.2.5 " + std::string(kMaxHostsLineBytes, 'a') + "\n";  // a huge line
  text += "192.0.2.6 last.example";                                    // no final newline
  std::vector<std::string> errors;
  auto t = HostsTable::parse("/h", text, errors);
  EXPECT_EQ(t->names(), 2u);
  EXPECT_NE(t->find(lw("ok.example")), HostsTable::kNone);
  EXPECT_NE(t->find(lw("last.example")), HostsTable::kNone);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_TRUE(errors[0].starts_with("2: '192.0.2.2\\x00' is not a numeric")) << errors[0];
  EXPECT_TRUE(errors[1].starts_with("3: 'nul\\x00name.example' is not a host name")) << errors[1];
  EXPECT_TRUE(errors[2].starts_with("4: ")) << errors[2];
  EXPECT_TRUE(errors[3].starts_with("5: a line of 1048586 bytes (more than 1048576)")) << errors[3];
  for (const auto& e : errors)
    EXPECT_LT(e.size(), 200u) << e;
}

TEST(HostsTable, ABlocklistNameCostsItsWireFormAndUnderTwentyFiveBytes) {
  std::string text;
  std::size_t wire_bytes = 0;
  for (int i = 0; i < 100000; ++i) {
    const std::string name =
        "ads" + std::to_string(i) + ".tracker" + std::to_string(i % 97) + ".example";
    text += "0.0.0.0 " + name + "\n";
    wire_bytes += name.size() + 2;
  }
  auto t = table(text);
  ASSERT_EQ(t->names(), 100000u);
  // 12 bytes of entry and at most 16 of index (4-byte slots, a quarter to half full).
  EXPECT_LE(t->memory_bytes(), wire_bytes + 25 * t->names())
      << t->memory_bytes() << " bytes, names " << wire_bytes;
  EXPECT_NE(t->find(lw("ads99999.tracker89.example")), HostsTable::kNone);
  EXPECT_EQ(t->find(lw("ads100000.tracker89.example")), HostsTable::kNone);
}

TEST(HostsTable, AFileOfTheLimitIsReadAndOneByteMoreIsRefused) {
  const std::string base = ::testing::TempDir() + "hg_ht_" + std::to_string(::getpid());
  const std::string big = base + ".limit";
  std::ofstream(big) << "192.0.2.1 first.example\n";
  // The rest NUL bytes: one line of 64 MiB, skipped with a clear error, in bounded time.
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kMaxHostsFileBytes)), 0);
  auto ok = HostsTable::read(big);
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->table->names(), 1u);
  ASSERT_EQ(ok->errors.size(), 1u);
  EXPECT_TRUE(ok->errors[0].starts_with("2: a line of")) << ok->errors[0];
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kMaxHostsFileBytes) + 1), 0);
  auto refused = HostsTable::read(big);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().find("is larger than 67108864 bytes; not read"), std::string::npos)
      << refused.error();
  ::unlink(big.c_str());
}

}  // namespace
}  // namespace hg::resolver
