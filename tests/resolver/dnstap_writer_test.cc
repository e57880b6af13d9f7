// DnstapWriter to a file: every frame handed to it comes out whole and in order, whatever its
// size (many frames in a batch, frames larger than a batch that go alone) and however the
// batches were cut (full, flushed, left for the destructor), between a START and a STOP
// control frame; the file is read back here byte by byte as the Frame Streams format lays it
// out, and each frame decoded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "dnstap/codec.h"
#include "resolver/tap/dnstap_writer.h"
#include "tests/support/temp_dir.h"

namespace hg::resolver {
namespace {

struct FrameFile {
  bool ok = false;  // START first, STOP last, nothing after it, no truncated frame
  std::vector<std::vector<uint8_t>> data;
  std::string content_type;
};

// Frame Streams: each frame is a 32-bit big-endian length and that many bytes; a length of 0
// escapes a control frame (its own 32-bit length, then a 32-bit type and fields).
FrameFile read_frames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  FrameFile out;
  std::size_t at = 0;
  bool started = false;
  while (at + 4 <= b.size()) {
    const uint32_t len = base::load_u32(&b[at]);
    at += 4;
    if (len != 0) {
      if (!started || at + len > b.size()) return out;
      out.data.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(at),
                            b.begin() + static_cast<std::ptrdiff_t>(at + len));
      at += len;
      continue;
    }
    if (at + 8 > b.size()) return out;
    const uint32_t clen = base::load_u32(&b[at]);
    const uint32_t type = base::load_u32(&b[at + 4]);
    if (clen < 4 || at + 4 + clen > b.size()) return out;
    if (type == 2) {  // START: may carry the content type field (1), its length, the bytes
      if (clen >= 12 && base::load_u32(&b[at + 8]) == 1) {
        const uint32_t n = base::load_u32(&b[at + 12]);
        if (16 + n <= clen + 4) {
          out.content_type.assign(b.begin() + static_cast<std::ptrdiff_t>(at + 16),
                                  b.begin() + static_cast<std::ptrdiff_t>(at + 16 + n));
        }
      }
      started = true;
    } else if (type == 3) {  // STOP: the end
      out.ok = started && at + 4 + clen == b.size();
      return out;
    }
    at += 4 + clen;
  }
  return out;
}

TEST(DnstapWriter, FileHoldsEveryFrameWholeAndInOrder) {
  const test::TempDir dir("hg-dnstap-writer");
  const std::string path = dir.file("out.dnstap");

  // Queries of 0..699 bytes (several to a batch), then three answers of 70,000 bytes: each
  // larger than a batch.
  std::vector<std::vector<uint8_t>> sent;
  for (int i = 0; i < 1500; ++i) {
    std::vector<uint8_t> q(static_cast<std::size_t>(i % 700));
    for (std::size_t k = 0; k < q.size(); ++k)
      q[k] = static_cast<uint8_t>(static_cast<std::size_t>(i) + k);
    sent.push_back(std::move(q));
  }
  for (int i = 0; i < 3; ++i)
    sent.emplace_back(70'000, static_cast<uint8_t>(0x40 + i));

  DnstapCounters counters;
  {
    DnstapWriter::Options o;
    o.target = path;
    o.identity = "unit";
    o.version = "test 1";
    auto w = DnstapWriter::open(o, counters);
    ASSERT_TRUE(w) << w.error();
    const uint8_t client[4] = {192, 0, 2, 1};
    for (std::size_t i = 0; i < sent.size(); ++i) {
      dnstap::Message m;
      const bool query = i < 1500;
      m.type = query ? dnstap::MessageType::ClientQuery : dnstap::MessageType::ClientResponse;
      m.family = dnstap::Family::Inet;
      m.protocol = dnstap::Protocol::Udp;
      m.query_address = client;
      m.query_port = 40000 + static_cast<uint32_t>(i);
      m.query_time = dnstap::Timestamp{1'800'000'000 + i, static_cast<uint32_t>(i)};
      (query ? m.query_message : m.response_message) = sent[i];
      w.value()->write(0, m);
    }
  }  // the writer flushes, writes STOP and closes

  EXPECT_EQ(counters.written.load(), sent.size());
  EXPECT_EQ(counters.dropped.load(), 0U);
  const FrameFile f = read_frames(path);
  EXPECT_TRUE(f.ok);
  EXPECT_EQ(f.content_type, "protobuf:dnstap.Dnstap");
  ASSERT_EQ(f.data.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    dnstap::Message m;
    ASSERT_EQ(dnstap::decode(f.data[i], m), dnstap::DecodeStatus::Ok) << "frame " << i;
    EXPECT_EQ(std::string(m.identity.begin(), m.identity.end()), "unit");
    EXPECT_EQ(std::string(m.version.begin(), m.version.end()), "test 1");
    EXPECT_EQ(m.query_port, 40000 + i);
    const auto got = i < 1500 ? m.query_message : m.response_message;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), sent[i].begin(), sent[i].end()))
        << "frame " << i;
  }
}

// Two workers' queues, each flushed at its own moments (as each worker does at the end of its
// loop iterations), with frames larger than a batch among them: per queue, every frame in the
// order written; the counters count frames, not batches.
TEST(DnstapWriter, EachQueueKeepsItsOrderAcrossFlushesAndLargeFrames) {
  const test::TempDir dir("hg-dnstap-writer");
  const std::string path = dir.file("two.dnstap");

  constexpr uint32_t kPerQueue = 3000;
  auto size_of = [](uint32_t i) -> std::size_t {
    if (i % 997 == 0) return DnstapWriter::kBatch + 100;  // alone, between batches
    return 20 + (i * 37) % 300;
  };
  DnstapCounters counters;
  {
    DnstapWriter::Options o;
    o.target = path;
    o.queues = 2;
    auto w = DnstapWriter::open(o, counters);
    ASSERT_TRUE(w) << w.error();
    const uint8_t client[4] = {192, 0, 2, 7};
    std::vector<uint8_t> payload;
    for (uint32_t i = 0; i < kPerQueue; ++i) {
      for (unsigned q = 0; q < 2; ++q) {
        payload.assign(size_of(i), static_cast<uint8_t>(i + q));
        dnstap::Message m;
        m.type = dnstap::MessageType::ClientQuery;
        m.family = dnstap::Family::Inet;
        m.protocol = dnstap::Protocol::Udp;
        m.query_address = client;
        m.query_port = q;                                    // which queue
        m.query_time = dnstap::Timestamp{1'800'000'000, i};  // its place in that queue
        m.query_message = payload;
        w.value()->write(q, m);
        // Queue 0 flushes every 7 frames, queue 1 every 50; both leave the rest to the end.
        if (q == 0 && i % 7 == 6) w.value()->flush(0);
        if (q == 1 && i % 50 == 49) w.value()->flush(1);
      }
    }
  }

  EXPECT_EQ(counters.written.load(), 2 * kPerQueue);
  EXPECT_EQ(counters.dropped.load(), 0U);
  const FrameFile f = read_frames(path);
  EXPECT_TRUE(f.ok);
  ASSERT_EQ(f.data.size(), 2 * kPerQueue);
  uint32_t next[2] = {0, 0};
  for (std::size_t k = 0; k < f.data.size(); ++k) {
    dnstap::Message m;
    ASSERT_EQ(dnstap::decode(f.data[k], m), dnstap::DecodeStatus::Ok) << "frame " << k;
    ASSERT_TRUE(m.query_port.has_value() && *m.query_port < 2);
    const uint32_t q = *m.query_port;
    const uint32_t i = m.query_time->nsec;
    ASSERT_EQ(i, next[q]) << "queue " << q << ", frame " << k;
    ++next[q];
    ASSERT_EQ(m.query_message.size(), size_of(i));
    EXPECT_EQ(m.query_message.front(), static_cast<uint8_t>(i + q));
  }
  EXPECT_EQ(next[0], kPerQueue);
  EXPECT_EQ(next[1], kPerQueue);
}

}  // namespace
}  // namespace hg::resolver
