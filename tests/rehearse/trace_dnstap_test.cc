// The dnstap Frame Streams reader on files built here: message types mapped to sides and
// views, addresses and times, and every kind of corrupt or truncated file.
#include <gtest/gtest.h>

#include "dnstap/codec.h"
#include "tests/rehearse/trace_test_util.h"
#include "tools/rehearse/trace/frame_writer.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {
namespace {

using namespace test;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

Bytes payload(uint32_t type, uint16_t id, int64_t qt, int64_t rt, bool tcp = false) {
  static const uint8_t client[4] = {192, 0, 2, 7};
  static const uint8_t server[4] = {192, 0, 2, 53};
  const bool query = type % 2 == 1;
  const Bytes msg = dns_message(id, "www.example", !query, 60);
  dnstap::Message v;
  v.type = static_cast<dnstap::MessageType>(type);
  v.family = dnstap::Family::Inet;
  v.protocol = tcp ? dnstap::Protocol::Tcp : dnstap::Protocol::Udp;
  v.query_address = client;
  v.response_address = server;
  v.query_port = 5300u + id;
  v.response_port = 53;
  constexpr int64_t kNs = 1'000'000'000;
  if (qt != 0) v.query_time = dnstap::Timestamp{uint64_t(qt / kNs), uint32_t(qt % kNs)};
  if (rt != 0) v.response_time = dnstap::Timestamp{uint64_t(rt / kNs), uint32_t(rt % kNs)};
  (query ? v.query_message : v.response_message) = msg;
  Bytes out;
  dnstap::encode(v, out);
  return out;
}

std::string write_frames(const TempDir& dir, const std::vector<Bytes>& frames,
                         const std::string& name = "t.fstrm") {
  FrameWriter w;
  EXPECT_TRUE(w.open(dir.file(name)));
  for (const auto& f : frames)
    EXPECT_TRUE(w.write(f));
  EXPECT_TRUE(w.close());
  return dir.file(name);
}

std::vector<Bytes> sample_frames() {
  return {payload(5, 1, kT0, 0),                        // CLIENT_QUERY
          payload(7, 2, kT0 + 100, 0),                  // FORWARDER_QUERY
          payload(8, 2, kT0 + 100, kT0 + 20'000'100),   // FORWARDER_RESPONSE
          payload(6, 1, kT0, kT0 + 20'000'200, true)};  // CLIENT_RESPONSE over TCP
}

std::unique_ptr<TraceReader> open_ok(const std::string& path, TraceOptions opt = {}) {
  TraceError err;
  auto r = open_trace(path, opt, err);
  EXPECT_NE(r, nullptr) << err.to_string();
  return r;
}

TEST(DnstapReader, SidesRolesAddressesTimes) {
  TempDir dir;
  auto r = open_ok(write_frames(dir, sample_frames()));
  auto all = read_all(*r);
  EXPECT_EQ(all.last, ReadStatus::End);
  ASSERT_EQ(all.events.size(), 4u);
  const auto& cq = all.events[0];
  EXPECT_EQ(cq.side, Side::Client);
  EXPECT_EQ(cq.role, Role::Query);
  EXPECT_EQ(cq.time_ns, kT0);
  EXPECT_EQ(cq.family, 4);
  EXPECT_EQ(cq.client_port, 5301);
  EXPECT_EQ(cq.client_addr[0], 192);
  EXPECT_EQ(cq.client_addr[3], 7);
  EXPECT_EQ(cq.dnstap_type, 5);
  EXPECT_EQ(all.messages[0], dns_message(1, "www.example", false, 60));
  EXPECT_EQ(all.events[1].side, Side::Upstream);
  EXPECT_EQ(all.events[1].role, Role::Query);
  EXPECT_EQ(all.events[2].side, Side::Upstream);
  EXPECT_EQ(all.events[2].role, Role::Response);
  EXPECT_EQ(all.events[2].time_ns, kT0 + 20'000'100);
  EXPECT_EQ(all.events[2].query_time_ns, kT0 + 100);
  const auto& cr = all.events[3];
  EXPECT_EQ(cr.side, Side::Client);
  EXPECT_EQ(cr.role, Role::Response);
  EXPECT_TRUE(cr.tcp);
  EXPECT_EQ(cr.time_ns, kT0 + 20'000'200);
  EXPECT_EQ(cr.query_time_ns, kT0);
  EXPECT_EQ(all.messages[3], dns_message(1, "www.example", true, 60));
  const std::string d = r->describe();
  EXPECT_NE(d.find("protobuf:dnstap.Dnstap"), std::string::npos) << d;
  EXPECT_NE(d.find("client view (CLIENT_*: 2 messages)"), std::string::npos) << d;
  EXPECT_NE(d.find("FORWARDER_*: 2"), std::string::npos) << d;
  EXPECT_EQ(r->skipped(), 0u);
}

TEST(DnstapReader, AuthIsClientSideAndSaysSo) {
  TempDir dir;
  auto r = open_ok(write_frames(dir, {payload(1, 1, kT0, 0), payload(2, 1, kT0, kT0 + 5),
                                      payload(13, 1, kT0, 0)}));  // UPDATE_QUERY: ignored
  auto all = read_all(*r);
  ASSERT_EQ(all.events.size(), 2u);
  EXPECT_EQ(all.events[0].side, Side::Client);
  EXPECT_EQ(all.events[1].side, Side::Client);
  EXPECT_EQ(all.events[1].role, Role::Response);
  EXPECT_NE(r->describe().find("authoritative view"), std::string::npos) << r->describe();
  EXPECT_NE(r->describe().find("1 other messages ignored"), std::string::npos);
}

TEST(DnstapReader, ConcatenatedStreamsAndEmptyStream) {
  TempDir dir;
  const auto a = read_file(write_frames(dir, {payload(5, 1, kT0, 0)}, "a"));
  const auto b = read_file(write_frames(dir, {}, "b"));
  Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  both.insert(both.end(), a.begin(), a.end());
  write_file(dir.file("ab"), both);
  auto all = read_all(*open_ok(dir.file("ab")));
  EXPECT_EQ(all.last, ReadStatus::End);
  EXPECT_EQ(all.events.size(), 2u);
}

// Every cut of a valid file: Bad with an offset inside the file (never a crash, never an
// event that was not written), or with skip_bad the events before the cut and End.
TEST(DnstapReader, EveryTruncationIsBadWithAnOffset) {
  TempDir dir;
  const Bytes full = read_file(write_frames(dir, sample_frames()));
  for (std::size_t cut = 1; cut < full.size(); ++cut) {
    const Bytes part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    TraceError err;
    auto r = open_trace_memory(part, "cut.fstrm", {}, err);
    if (cut < 4) {  // too short to tell what it is
      EXPECT_EQ(r, nullptr);
      EXPECT_EQ(err.offset, 0u);
      continue;
    }
    ASSERT_NE(r, nullptr) << cut;
    auto all = read_all(*r);
    ASSERT_EQ(all.last, ReadStatus::Bad) << "cut at " << cut;
    EXPECT_LE(r->error().offset, cut) << cut;
    EXPECT_LE(all.events.size(), 4u);
    EXPECT_EQ(r->error().to_string().rfind("cut.fstrm: offset ", 0), 0u);
    TraceOptions skip;
    skip.skip_bad = true;
    auto s = open_trace_memory(part, "cut.fstrm", skip, err);
    ASSERT_NE(s, nullptr);
    auto sall = read_all(*s);
    // A cut inside the START frame cannot be skipped: there is nothing to read.
    if (cut >= 42) {
      EXPECT_EQ(sall.last, ReadStatus::End) << cut;
    }
    EXPECT_EQ(sall.events.size(), all.events.size()) << cut;
  }
}

TEST(DnstapReader, TruncatedFrameNamesItsOffset) {
  TempDir dir;
  Bytes full = read_file(write_frames(dir, sample_frames()));
  const std::size_t first_frame = 8 + 4 + 8 + 22;  // escape+len, START, content type field
  const std::size_t second = first_frame + 4 + sample_frames()[0].size();
  full.resize(second + 10);
  write_file(dir.file("cut"), full);
  auto r = open_ok(dir.file("cut"));
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 1u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().to_string(), dir.file("cut") + ": offset " + std::to_string(second) +
                                        ": truncated frame: 6 of " +
                                        std::to_string(sample_frames()[1].size()) + " bytes");
}

TEST(DnstapReader, MissingStopIsBadUnlessSkipBad) {
  TempDir dir;
  Bytes full = read_file(write_frames(dir, sample_frames()));
  full.resize(full.size() - 12);  // the STOP frame
  write_file(dir.file("nostop"), full);
  auto r = open_ok(dir.file("nostop"));
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 4u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, full.size());
  EXPECT_NE(r->error().what.find("STOP"), std::string::npos);
  TraceOptions skip;
  skip.skip_bad = true;
  auto s = open_ok(dir.file("nostop"), skip);
  EXPECT_EQ(read_all(*s).last, ReadStatus::End);
}

TEST(DnstapReader, HugeFrameLengthIsBadAndSkipBadResyncs) {
  TempDir dir;
  Bytes full = read_file(write_frames(dir, sample_frames()));
  const std::size_t first_frame = 42;
  const std::size_t second = first_frame + 4 + sample_frames()[0].size();
  full[second] = 0x7f;  // the second frame's length: ~2 GiB
  write_file(dir.file("huge"), full);
  auto r = open_ok(dir.file("huge"));
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 1u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, second);
  EXPECT_NE(r->error().what.find("exceeds"), std::string::npos);
  TraceOptions skip;
  skip.skip_bad = true;
  auto s = open_ok(dir.file("huge"), skip);
  auto sall = read_all(*s);
  EXPECT_EQ(sall.last, ReadStatus::End);
  EXPECT_EQ(sall.events.size(), 3u) << "the frames after the corrupt one are found again";
  EXPECT_EQ(s->skipped(), 1u);
}

TEST(DnstapReader, CorruptPayloadIsBadAndSkippable) {
  TempDir dir;
  auto frames = sample_frames();
  frames[1] = Bytes{0x7a, 0xff, 0xff};  // field 15, wire type 2: not a dnstap message
  const auto path = write_frames(dir, frames);
  auto r = open_ok(path);
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 1u);
  ASSERT_EQ(all.last, ReadStatus::Bad);
  EXPECT_EQ(r->error().offset, 42 + 4 + frames[0].size());
  EXPECT_NE(r->error().what.find("frame 2: not a dnstap message"), std::string::npos)
      << r->error().what;
  TraceOptions skip;
  skip.skip_bad = true;
  auto s = open_ok(path, skip);
  auto sall = read_all(*s);
  EXPECT_EQ(sall.last, ReadStatus::End);
  EXPECT_EQ(sall.events.size(), 3u);
  EXPECT_EQ(s->skipped(), 1u);
}

TEST(DnstapReader, WrongContentTypeAndBadControlFrames) {
  TempDir dir;
  FrameWriter w;
  ASSERT_TRUE(w.open(dir.file("ct"), "protobuf:other.Thing"));
  ASSERT_TRUE(w.close());
  auto r = open_ok(dir.file("ct"));
  EXPECT_EQ(read_all(*r).last, ReadStatus::Bad);
  EXPECT_NE(r->error().what.find("content type"), std::string::npos);
  EXPECT_EQ(r->error().offset, 0u);

  // A control frame whose length is far too big.
  Bytes b = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2};
  write_file(dir.file("ctl"), b);
  auto c = open_ok(dir.file("ctl"));
  EXPECT_EQ(read_all(*c).last, ReadStatus::Bad);
  EXPECT_NE(c->error().what.find("control frame length"), std::string::npos);

  // A field length overrunning the control frame.
  b = {0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 99};
  write_file(dir.file("fld"), b);
  auto f = open_ok(dir.file("fld"));
  EXPECT_EQ(read_all(*f).last, ReadStatus::Bad);
  EXPECT_NE(f->error().what.find("overruns"), std::string::npos) << f->error().what;

  // A data frame where START belongs.
  b = {0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3};
  write_file(dir.file("stopfirst"), b);
  auto s = open_ok(dir.file("stopfirst"));
  EXPECT_EQ(read_all(*s).last, ReadStatus::Bad);
  EXPECT_NE(s->error().what.find("START"), std::string::npos);
}

TEST(DnstapReader, GarbageAfterStartWithSkipBadEnds) {
  // A bounded resynchronisation: a file of junk frames ends, it does not hang.
  TempDir dir;
  Bytes b = read_file(write_frames(dir, {}));
  b.resize(b.size() - 12);
  for (int i = 0; i < 200000; ++i)
    b.push_back(static_cast<uint8_t>(0x80 | (i * 7)));
  write_file(dir.file("junk"), b);
  TraceOptions skip;
  skip.skip_bad = true;
  auto r = open_ok(dir.file("junk"), skip);
  auto all = read_all(*r);
  EXPECT_EQ(all.events.size(), 0u);
  EXPECT_NE(all.last, ReadStatus::Event);
  EXPECT_GE(r->skipped(), 1u);
}

}  // namespace
}  // namespace hg::rehearse
