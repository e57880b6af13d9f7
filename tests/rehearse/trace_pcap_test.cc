// The pcap / pcapng reader: link types, IPv4/IPv6, UDP, TCP reassembly, IP fragments, the
// query-time match, and corrupt or truncated files (Bad with the record's offset).
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/rehearse/trace_test_util.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {
namespace {

using namespace test;

constexpr int64_t kT0 = 1'700'000'000'123'456'789;

std::unique_ptr<TraceReader> open_ok(const std::string& path, TraceOptions opt = {}) {
  TraceError err;
  auto r = open_trace(path, opt, err);
  EXPECT_NE(r, nullptr) << err.to_string();
  return r;
}

struct LinkCase {
  int dlt;
  bool vlan;
  bool ipv6;
};

class PcapLinkTest : public ::testing::TestWithParam<LinkCase> {};

TEST_P(PcapLinkTest, QueryAndResponseOverUdp) {
  const auto c = GetParam();
  TempDir dir;
  const Addr client = c.ipv6 ? v6(1) : v4(10, 0, 0, 1);
  const Addr server = c.ipv6 ? v6(53) : v4(10, 0, 0, 53);
  const Bytes q = dns_message(0x1234, "www.example", false);
  const Bytes a = dns_message(0x1234, "WWW.example", true, 77);
  const Bytes other = dns_message(9, "x.example", false);
  std::vector<Packet> pk = {
      {kT0, link_frame(c.dlt, ip_packet(client, server, 17, udp(40000, 53, q)), c.vlan)},
      // Not DNS on port 53: passed over without a word.
      {kT0 + 10, link_frame(c.dlt, ip_packet(client, server, 17, udp(40000, 5353, other)), c.vlan)},
      {kT0 + 1'000'000,
       link_frame(c.dlt, ip_packet(server, client, 17, udp(53, 40000, a)), c.vlan)},
  };
  const auto path = dir.file("t.pcap");
  write_pcap(path, c.dlt, pk);
  auto r = open_ok(path);
  ASSERT_NE(r, nullptr);
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 2u);
  const auto& e0 = all.events[0];
  EXPECT_EQ(e0.role, Role::Query);
  EXPECT_EQ(e0.side, Side::Client);
  EXPECT_EQ(e0.time_ns, kT0);
  EXPECT_EQ(e0.family, c.ipv6 ? 6 : 4);
  EXPECT_EQ(e0.client_port, 40000);
  EXPECT_EQ(e0.client_addr, client.a);
  EXPECT_FALSE(e0.tcp);
  EXPECT_EQ(all.messages[0], q);
  const auto& e1 = all.events[1];
  EXPECT_EQ(e1.role, Role::Response);
  EXPECT_EQ(e1.client_port, 40000);
  EXPECT_EQ(e1.client_addr, client.a);
  EXPECT_EQ(e1.time_ns, kT0 + 1'000'000);
  EXPECT_EQ(e1.query_time_ns, kT0) << "matched by client, port, ID and question (any case)";
  EXPECT_EQ(all.messages[1], a);
  EXPECT_EQ(r->skipped(), 0u);
  EXPECT_NE(r->describe().find("pcap"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    LinkTypes, PcapLinkTest,
    ::testing::Values(LinkCase{DLT_EN10MB, false, false}, LinkCase{DLT_EN10MB, true, true},
                      LinkCase{DLT_EN10MB, false, true}, LinkCase{DLT_LINUX_SLL, false, false},
                      LinkCase{DLT_LINUX_SLL, false, true}, LinkCase{DLT_LINUX_SLL2, false, false},
                      LinkCase{DLT_LINUX_SLL2, false, true}, LinkCase{DLT_RAW, false, false},
                      LinkCase{DLT_RAW, false, true}, LinkCase{DLT_NULL, false, false},
                      LinkCase{DLT_NULL, false, true}, LinkCase{DLT_LOOP, false, true}));

TEST(PcapReader, OtherPortWithOption) {
  TempDir dir;
  const Bytes q = dns_message(1, "a.example", false);
  write_pcap(dir.file("p.pcap"), DLT_RAW,
             {{kT0, ip_packet(v4(1, 1, 1, 1), v4(2, 2, 2, 2), 17, udp(1000, 5300, q))}});
  auto r53 = open_ok(dir.file("p.pcap"));
  EXPECT_EQ(read_all(*r53).events.size(), 0u);
  TraceOptions opt;
  opt.port = 5300;
  auto r = open_ok(dir.file("p.pcap"), opt);
  auto all = read_all(*r);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].client_port, 1000);
}

TEST(PcapReader, ResponseWithoutItsQueryHasNoQueryTime) {
  TempDir dir;
  const Bytes q = dns_message(1, "a.example", false);
  const Bytes a_other_id = dns_message(2, "a.example", true);
  const Bytes a_other_q = dns_message(1, "b.example", true);
  const Addr c = v4(1, 1, 1, 1), s = v4(2, 2, 2, 2);
  write_pcap(dir.file("p.pcap"), DLT_RAW,
             {{kT0, ip_packet(c, s, 17, udp(1000, 53, q))},
              {kT0 + 5, ip_packet(s, c, 17, udp(53, 1000, a_other_id))},
              {kT0 + 6, ip_packet(s, c, 17, udp(53, 1000, a_other_q))},
              {kT0 + 7, ip_packet(s, c, 17, udp(53, 1001, dns_message(1, "a.example", true)))}});
  auto all = read_all(*open_ok(dir.file("p.pcap")));
  ASSERT_EQ(all.events.size(), 4u);
  for (std::size_t i = 1; i < 4; ++i)
    EXPECT_EQ(all.events[i].query_time_ns, 0) << i;
}

TEST(PcapReader, TcpStreamsReassembled) {
  TempDir dir;
  const Addr c = v4(10, 0, 0, 1), s = v4(10, 0, 0, 2);
  const Bytes q1 = dns_message(1, "one.example", false);
  const Bytes q2 = dns_message(2, "two.example", false);
  const Bytes a1 = dns_message(1, "one.example", true);
  const Bytes a2 = dns_message(2, "two.example", true);
  Bytes cs = framed(q1);  // client -> server bytes
  const Bytes f2 = framed(q2);
  cs.insert(cs.end(), f2.begin(), f2.end());
  Bytes sc = framed(a1);  // server -> client
  const Bytes g2 = framed(a2);
  sc.insert(sc.end(), g2.begin(), g2.end());
  const uint32_t cisn = 1000, sisn = 0xfffffff0;  // the server's sequence numbers wrap
  const std::size_t cut = framed(q1).size() + 5;  // q2 split across two segments
  auto seg = [](const Bytes& b, std::size_t from, std::size_t to) {
    return Bytes(b.begin() + static_cast<std::ptrdiff_t>(from),
                 b.begin() + static_cast<std::ptrdiff_t>(to));
  };
  std::vector<Packet> pk = {
      {kT0, ip_packet(c, s, 6, tcp(40001, 53, cisn, 0x02, {}))},
      {kT0 + 1, ip_packet(s, c, 6, tcp(53, 40001, sisn, 0x12, {}))},
      {kT0 + 2, ip_packet(c, s, 6, tcp(40001, 53, cisn + 1, 0x18, seg(cs, 0, cut)))},
      // A retransmission overlapping what came, with new bytes after it.
      {kT0 + 3, ip_packet(c, s, 6, tcp(40001, 53, cisn + 1 + 3, 0x18, seg(cs, 3, cs.size())))},
      // The server's answers out of order: the second segment first.
      {kT0 + 4, ip_packet(s, c, 6, tcp(53, 40001, sisn + 1 + 10, 0x18, seg(sc, 10, sc.size())))},
      {kT0 + 5, ip_packet(s, c, 6, tcp(53, 40001, sisn + 1, 0x18, seg(sc, 0, 10)))},
      {kT0 + 6, ip_packet(c, s, 6, tcp(40001, 53, cisn + 1 + uint32_t(cs.size()), 0x11, {}))},
  };
  write_pcap(dir.file("tcp.pcap"), DLT_RAW, pk);
  auto r = open_ok(dir.file("tcp.pcap"));
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 4u);
  EXPECT_EQ(all.messages[0], q1);
  EXPECT_EQ(all.messages[1], q2);
  EXPECT_EQ(all.messages[2], a1);
  EXPECT_EQ(all.messages[3], a2);
  for (const auto& e : all.events) {
    EXPECT_TRUE(e.tcp);
    EXPECT_EQ(e.client_port, 40001);
    EXPECT_EQ(e.client_addr, c.a);
  }
  EXPECT_EQ(all.events[0].role, Role::Query);
  EXPECT_EQ(all.events[2].role, Role::Response);
  EXPECT_EQ(all.events[2].query_time_ns, kT0 + 2) << "q1 was complete in the first data segment";
  EXPECT_EQ(r->skipped(), 0u);
}

TEST(PcapReader, TcpGapNeverFilledIsCountedSkipped) {
  TempDir dir;
  const Addr c = v4(10, 0, 0, 1), s = v4(10, 0, 0, 2);
  const Bytes f1 = framed(dns_message(1, "one.example", false));
  const Bytes f2 = framed(dns_message(2, "two.example", false));
  std::vector<Packet> pk = {
      {kT0, ip_packet(c, s, 6, tcp(40001, 53, 99, 0x02, {}))},
      {kT0 + 1, ip_packet(c, s, 6, tcp(40001, 53, 100, 0x18, f1))},
      // f2 was lost on the wire; a third message arrives after the gap and never completes.
      {kT0 + 2, ip_packet(c, s, 6,
                          tcp(40001, 53, 100 + uint32_t(f1.size() + f2.size()), 0x18,
                              framed(dns_message(3, "three.example", false))))},
      {kT0 + 3, ip_packet(c, s, 6, tcp(40001, 53, 100 + uint32_t(f1.size() * 3), 0x11, {}))},
  };
  write_pcap(dir.file("gap.pcap"), DLT_RAW, pk);
  auto r = open_ok(dir.file("gap.pcap"));
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_GE(r->skipped(), 1u);
  EXPECT_NE(r->describe().find("TCP"), std::string::npos) << r->describe();
}

Bytes big_response() {
  Bytes m = dns_message(5, "big.example", true);
  for (int i = 0; i < 1500; ++i)
    m.push_back(static_cast<uint8_t>(i));
  return m;
}

TEST(PcapReader, Ipv4FragmentsReassembledInAnyOrder) {
  TempDir dir;
  const Addr c = v4(10, 0, 0, 1), s = v4(10, 0, 0, 2);
  const Bytes m = big_response();
  const Bytes dgram = udp(53, 41000, m);
  auto part = [&](std::size_t from, std::size_t to) {
    return Bytes(dgram.begin() + static_cast<std::ptrdiff_t>(from),
                 dgram.begin() + static_cast<std::ptrdiff_t>(std::min(to, dgram.size())));
  };
  std::vector<Packet> pk = {
      {kT0, ip_packet(s, c, 17, part(600, 1200), 75, true, 99)},
      {kT0 + 1, ip_packet(s, c, 17, part(1200, dgram.size()), 150, false, 99)},
      // An unrelated fragment train (other ID) that never completes.
      {kT0 + 2, ip_packet(s, c, 17, part(0, 600), 0, true, 100)},
      {kT0 + 3, ip_packet(s, c, 17, part(0, 600), 0, true, 99)},
  };
  write_pcap(dir.file("frag.pcap"), DLT_RAW, pk);
  auto r = open_ok(dir.file("frag.pcap"));
  auto all = read_all(*r);
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.messages[0], m);
  EXPECT_EQ(all.events[0].role, Role::Response);
  EXPECT_EQ(all.events[0].client_port, 41000);
  EXPECT_EQ(r->skipped(), 1u) << "the incomplete train, counted at the end";
}

TEST(PcapReader, Ipv6FragmentsReassembled) {
  TempDir dir;
  const Addr c = v6(1), s = v6(2);
  const Bytes m = big_response();
  const Bytes dgram = udp(53, 41000, m);
  const Bytes p1(dgram.begin(), dgram.begin() + 800);
  const Bytes p2(dgram.begin() + 800, dgram.end());
  write_pcap(dir.file("frag6.pcap"), DLT_RAW,
             {{kT0, ip_packet(s, c, 17, p2, 100, false, 7)},
              {kT0 + 1, ip_packet(s, c, 17, p1, 0, true, 7)}});
  auto all = read_all(*open_ok(dir.file("frag6.pcap")));
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.messages[0], m);
  EXPECT_EQ(all.events[0].family, 6);
}

// A pcapng file built by hand: Section Header, Interface Description (Ethernet, default
// microsecond resolution), one Enhanced Packet Block per (time in microseconds, frame).
Bytes pcapng(const std::vector<std::pair<uint64_t, Bytes>>& packets) {
  auto le32 = [](Bytes& b, uint32_t v) {
    for (int i = 0; i < 4; ++i)
      b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto le16 = [](Bytes& b, uint16_t v) {
    b.push_back(static_cast<uint8_t>(v));
    b.push_back(static_cast<uint8_t>(v >> 8));
  };
  Bytes f;
  le32(f, 0x0a0d0d0a), le32(f, 28), le32(f, 0x1a2b3c4d), le16(f, 1), le16(f, 0);
  le32(f, 0xffffffff), le32(f, 0xffffffff), le32(f, 28);
  le32(f, 1), le32(f, 20), le16(f, 1), le16(f, 0), le32(f, 65535), le32(f, 20);
  for (const auto& [us, frame] : packets) {
    const uint32_t padded = static_cast<uint32_t>((frame.size() + 3) & ~std::size_t{3});
    le32(f, 6), le32(f, 32 + padded), le32(f, 0), le32(f, static_cast<uint32_t>(us >> 32));
    le32(f, static_cast<uint32_t>(us)), le32(f, uint32_t(frame.size())),
        le32(f, uint32_t(frame.size()));
    f.insert(f.end(), frame.begin(), frame.end());
    while (f.size() % 4 != 0)
      f.push_back(0);
    le32(f, 32 + padded);
  }
  return f;
}

Bytes ng_frame(const Bytes& dns) {
  return link_frame(DLT_EN10MB, ip_packet(v4(1, 2, 3, 4), v4(5, 6, 7, 8), 17, udp(1234, 53, dns)));
}

TEST(PcapReader, Pcapng) {
  TempDir dir;
  const Bytes q = dns_message(3, "ng.example", false);
  write_file(dir.file("t.pcapng"), pcapng({{1'700'000'000'000'123ULL, ng_frame(q)}}));
  auto all = read_all(*open_ok(dir.file("t.pcapng")));
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.messages[0], q);
  EXPECT_EQ(all.events[0].time_ns, 1'700'000'000'000'123'000);
}

// A pcapng timestamp is 64 bits of (by default) microseconds: up to ~1.8e13 s, far past what
// int64 nanoseconds hold (~9.2e9 s). Such a record is bad, never a wrapped time. The file is
// the fuzzer's find (tests/fuzz/corpus/trace/found-pcapng-time-overflow): 53,761,720,551 s.
TEST(PcapReader, TimestampBeyondInt64NanosecondsIsBadWithItsOffset) {
  const std::string path =
      std::string(HG_SOURCE_DIR) + "/tests/fuzz/corpus/trace/found-pcapng-time-overflow";
  auto r = open_ok(path);
  auto all = read_all(*r);
  EXPECT_TRUE(all.events.empty());
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, 48u)
      << "the Enhanced Packet Block after a 28-byte SHB and 20-byte IDB";
  const std::string line = r->error().to_string();
  EXPECT_NE(line.find("53761720551"), std::string::npos) << line;
  EXPECT_NE(line.find("out of range"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(PcapReader, TimestampOutOfRangeWithSkipBadIsCountedAndTheRestRead) {
  TempDir dir;
  const Bytes a = dns_message(1, "a.example", false), b = dns_message(2, "b.example", false),
              c = dns_message(3, "c.example", false);
  const uint64_t t0 = 1'700'000'000'000'000ULL;
  // The middle record: the first second past the bound, then the largest 64-bit time.
  for (const uint64_t bad_us : {uint64_t{9'000'000'001'000'000}, ~uint64_t{0}}) {
    write_file(dir.file("t.pcapng"),
               pcapng({{t0, ng_frame(a)}, {bad_us, ng_frame(b)}, {t0 + 1, ng_frame(c)}}));
    TraceOptions opt;
    opt.skip_bad = true;
    auto r = open_ok(dir.file("t.pcapng"), opt);
    auto all = read_all(*r);
    EXPECT_EQ(all.last, ReadStatus::End);
    ASSERT_EQ(all.events.size(), 2u);
    EXPECT_EQ(all.messages[0], a);
    EXPECT_EQ(all.messages[1], c);
    EXPECT_EQ(all.events[1].time_ns, int64_t(t0 + 1) * 1000);
    EXPECT_EQ(r->skipped(), 1u);
    EXPECT_NE(r->describe().find("1 skipped for a timestamp out of range"), std::string::npos)
        << r->describe();
  }
  // The last second inside the bound is still a time.
  write_file(dir.file("edge.pcapng"), pcapng({{9'000'000'000'999'999ULL, ng_frame(a)}}));
  auto all = read_all(*open_ok(dir.file("edge.pcapng")));
  ASSERT_EQ(all.events.size(), 1u);
  EXPECT_EQ(all.events[0].time_ns, int64_t{9'000'000'000'999'999} * 1000);
}

// Three records; the third cut in half.
struct Cut {
  std::string path;
  uint64_t third_offset;
};
Cut truncated_pcap(const TempDir& dir) {
  const Addr c = v4(1, 1, 1, 1), s = v4(2, 2, 2, 2);
  std::vector<Packet> pk;
  uint64_t off = 24;
  for (uint16_t i = 0; i < 3; ++i) {
    pk.push_back({kT0 + i, ip_packet(c, s, 17, udp(1000, 53, dns_message(i, "t.example", false)))});
    if (i < 2) off += 16 + pk.back().frame.size();
  }
  const auto path = dir.file("cut.pcap");
  write_pcap(path, DLT_RAW, pk);
  Bytes b = read_file(path);
  b.resize(b.size() - 10);
  write_file(path, b);
  return {path, off};
}

TEST(PcapReader, TruncatedFileIsBadWithTheRecordOffset) {
  TempDir dir;
  const Cut cut = truncated_pcap(dir);
  auto r = open_ok(cut.path);
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 2u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, cut.third_offset);
  EXPECT_EQ(r->error().file, cut.path);
  const std::string line = r->error().to_string();
  EXPECT_EQ(line.rfind(cut.path + ": offset " + std::to_string(cut.third_offset) + ": ", 0), 0u)
      << line;
  EXPECT_NE(line.find("truncated"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  TraceEvent ev;
  EXPECT_EQ(r->next(ev), ReadStatus::Bad) << "stays Bad";
}

TEST(PcapReader, TruncatedFileWithSkipBadCountsTheRecord) {
  TempDir dir;
  const Cut cut = truncated_pcap(dir);
  TraceOptions opt;
  opt.skip_bad = true;
  auto r = open_ok(cut.path, opt);
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  EXPECT_EQ(all.events.size(), 2u);
  EXPECT_EQ(r->skipped(), 1u);
}

TEST(PcapReader, CorruptRecordLengthIsBad) {
  TempDir dir;
  const Cut cut = truncated_pcap(dir);
  Bytes b = read_file(cut.path);
  const std::size_t second = 24 + 16 + (b[24 + 8] | (b[24 + 9] << 8));  // little-endian caplen
  b[second + 8] = 0xff, b[second + 9] = 0xff, b[second + 10] = 0xff, b[second + 11] = 0x7f;
  write_file(cut.path, b);
  TraceOptions opt;
  opt.skip_bad = true;  // cannot resynchronise inside a pcap: still Bad
  auto r = open_ok(cut.path, opt);
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 1u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, second);
}

TEST(OpenTrace, BadHeadersAndUnknownFiles) {
  TempDir dir;
  TraceError err;
  write_file(dir.file("empty"), {});
  EXPECT_EQ(open_trace(dir.file("empty"), {}, err), nullptr);
  EXPECT_EQ(err.to_string(), dir.file("empty") + ": offset 0: empty file");
  write_file(dir.file("text"), {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(open_trace(dir.file("text"), {}, err), nullptr);
  EXPECT_EQ(err.offset, 0u);
  EXPECT_NE(err.what.find("not a trace"), std::string::npos);
  // pcap magic, then a header cut short.
  write_file(dir.file("short.pcap"), {0xd4, 0xc3, 0xb2, 0xa1, 2, 0});
  EXPECT_EQ(open_trace(dir.file("short.pcap"), {}, err), nullptr);
  EXPECT_EQ(err.file, dir.file("short.pcap"));
  EXPECT_NE(err.what.find("pcap"), std::string::npos) << err.what;
  EXPECT_EQ(open_trace(dir.file("missing"), {}, err), nullptr);
  EXPECT_NE(err.what.find("cannot open"), std::string::npos);
}

TEST(TraceMerger, MergesByTimeAndKeepsEachMessage) {
  TempDir dir;
  const Addr c = v4(1, 1, 1, 1), s = v4(2, 2, 2, 2);
  std::vector<Packet> a, b;
  for (uint16_t i = 0; i < 20; ++i) {
    auto& dst = (i % 3 == 0) ? b : a;
    dst.push_back(
        {kT0 + i * 10, ip_packet(c, s, 17, udp(1000, 53, dns_message(i, "m.example", false)))});
  }
  write_pcap(dir.file("a.pcap"), DLT_RAW, a);
  write_pcap(dir.file("b.pcap"), DLT_RAW, b);
  TraceMerger m;
  m.add(open_ok(dir.file("a.pcap")));
  m.add(open_ok(dir.file("b.pcap")));
  auto all = read_all(m);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 20u);
  for (uint16_t i = 0; i < 20; ++i) {
    EXPECT_EQ(all.events[i].time_ns, kT0 + i * 10);
    EXPECT_EQ(all.messages[i], dns_message(i, "m.example", false)) << i;
  }
  EXPECT_NE(m.describe().find("; "), std::string::npos);
}

TEST(TraceMerger, BadStopsTheMerge) {
  TempDir dir;
  const Cut cut = truncated_pcap(dir);
  write_pcap(dir.file("ok.pcap"), DLT_RAW,
             {{kT0 + 100, ip_packet(v4(1, 1, 1, 1), v4(2, 2, 2, 2), 17,
                                    udp(1000, 53, dns_message(1, "x.example", false)))}});
  TraceMerger m;
  m.add(open_ok(dir.file("ok.pcap")));
  m.add(open_ok(cut.path));
  auto all = read_all(m);
  EXPECT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(m.error().offset, cut.third_offset);
}

}  // namespace
}  // namespace hg::rehearse
