// StreamFramer (resolver/net/stream_framer.h), the one reader of 2-byte length-prefixed
// messages under DNS over TCP and DNS over TLS, against hostile streams: a byte at a time, a
// prefix split across reads, many messages in one read, lengths 0 and 65535, lengths out of
// range, and a peer that never finishes a message (the cap on buffered bytes).
#include "resolver/net/stream_framer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace hg::resolver {
namespace {

using Bytes = std::vector<uint8_t>;

// A message of `len` bytes whose bytes say where they are (so a shifted byte shows).
Bytes message(uint8_t tag, std::size_t len) {
  Bytes m(len);
  for (std::size_t i = 0; i < len; ++i)
    m[i] = static_cast<uint8_t>(tag + i * 7);
  return m;
}

Bytes framed(const std::vector<Bytes>& ms) {
  Bytes out;
  for (const Bytes& m : ms) {
    out.push_back(static_cast<uint8_t>(m.size() >> 8));
    out.push_back(static_cast<uint8_t>(m.size()));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

// Feeds `stream` in pieces of `chunk` bytes through write_area()/commit() (the way the
// listeners read a socket), taking every message out after each piece.
std::vector<Bytes> read_in_chunks(StreamFramer& f, const Bytes& stream, std::size_t chunk) {
  std::vector<Bytes> got;
  std::size_t at = 0;
  for (int guard = 0; at < stream.size() && guard < 1'000'000; ++guard) {
    const std::span<uint8_t> area = f.write_area(std::min(chunk, stream.size() - at));
    if (area.empty()) break;  // full (or broken): the caller stops reading
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), area.size(), area.begin());
    f.commit(area.size());
    at += area.size();
    while (auto m = f.next())
      got.emplace_back(m->begin(), m->end());
    EXPECT_LE(f.buffered(), 2u + 65535u);
  }
  return got;
}

TEST(StreamFramer, MessagesComeOutWholeHoweverTheStreamIsCut) {
  // Lengths 0 and 65535 (the extremes a prefix can say), and sizes around a read chunk.
  const std::vector<Bytes> ms = {message(1, 12),    message(2, 0),    message(3, 300),
                                 message(4, 65535), message(5, 4095), message(6, 4096),
                                 message(7, 1),     message(8, 40)};
  const Bytes stream = framed(ms);
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7},
                                  std::size_t{1000}, std::size_t{4096}, stream.size()}) {
    StreamFramer f;
    EXPECT_EQ(read_in_chunks(f, stream, chunk), ms) << "chunk " << chunk;
    EXPECT_FALSE(f.broken());
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(f.buffered(), 0u);
  }
}

TEST(StreamFramer, APrefixSplitAcrossReadsWaitsForItsSecondByte) {
  StreamFramer f;
  const Bytes m = message(9, 300);
  const Bytes s = framed({m});
  ASSERT_EQ(f.feed(std::span<const uint8_t>(s).first(1)), 1u);
  EXPECT_FALSE(f.next());
  EXPECT_EQ(f.buffered(), 1u);
  ASSERT_EQ(f.feed(std::span<const uint8_t>(s).subspan(1, 1)), 1u);
  EXPECT_FALSE(f.next());  // the length is known, the message is not here yet
  ASSERT_EQ(f.feed(std::span<const uint8_t>(s).subspan(2)), s.size() - 2);
  const auto got = f.next();
  ASSERT_TRUE(got);
  EXPECT_EQ(Bytes(got->begin(), got->end()), m);
  EXPECT_TRUE(f.empty());
}

TEST(StreamFramer, ManyMessagesInOneReadComeOutInOrderAndThePartialTailStays) {
  std::vector<Bytes> ms;
  for (int i = 0; i < 500; ++i)
    ms.push_back(message(static_cast<uint8_t>(i), 12 + static_cast<std::size_t>(i % 50)));
  Bytes s = framed(ms);
  const Bytes tail = framed({message(99, 200)});
  s.insert(s.end(), tail.begin(), tail.begin() + 50);  // the start of one more
  StreamFramer f;
  ASSERT_EQ(f.feed(s), s.size());
  std::vector<Bytes> got;
  while (auto m = f.next())
    got.emplace_back(m->begin(), m->end());
  EXPECT_EQ(got, ms);
  EXPECT_EQ(f.buffered(), 50u);
  EXPECT_FALSE(f.broken());
  // The rest arrives: the held bytes moved to the front and the message is whole.
  ASSERT_EQ(f.feed(std::span<const uint8_t>(tail).subspan(50)), tail.size() - 50);
  const auto last = f.next();
  ASSERT_TRUE(last);
  EXPECT_EQ(Bytes(last->begin(), last->end()), message(99, 200));
}

TEST(StreamFramer, AnEmptyMessageIsAMessageUnlessTheLimitsSayOtherwise) {
  StreamFramer tcp;
  ASSERT_EQ(tcp.feed(Bytes{0, 0, 0, 0}), 4u);
  for (int i = 0; i < 2; ++i) {
    const auto m = tcp.next();
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->empty());
  }
  EXPECT_FALSE(tcp.next());
  EXPECT_FALSE(tcp.broken());

  StreamFramer strict(StreamFramer::Limits{.min_length = 12});
  ASSERT_EQ(strict.feed(Bytes{0, 0}), 2u);
  EXPECT_FALSE(strict.next());
  EXPECT_TRUE(strict.broken());
}

TEST(StreamFramer, APeerThatNeverFinishesAMessageHoldsOneMessageAtMost) {
  // A prefix of 65535 and then an endless dribble: the framer takes 2 + 65535 bytes (the
  // message is then whole) and not one more until it is taken out.
  StreamFramer f;
  Bytes endless = {0xff, 0xff};
  endless.resize(200'000, 0x5a);
  std::size_t taken = 0;
  for (int i = 0; i < 100 && taken < endless.size(); ++i) {
    const std::size_t n = f.feed(std::span<const uint8_t>(endless).subspan(taken, 4096));
    if (n == 0) break;
    taken += n;
  }
  EXPECT_EQ(taken, 2u + 65535u);
  EXPECT_EQ(f.room(), 0u);
  EXPECT_TRUE(f.write_area(4096).empty());
  const auto m = f.next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size(), 65535u);
  EXPECT_EQ(f.room(), 2u + 65535u);  // taken out: room for the next one
}

TEST(StreamFramer, ASmallerMaximumCapsTheBufferAndALongerLengthBreaksTheStream) {
  StreamFramer f(StreamFramer::Limits{.max_length = 100});
  const Bytes ok = framed({message(1, 100)});
  ASSERT_EQ(f.feed(ok), ok.size());
  EXPECT_EQ(f.room(), 0u);  // 2 + 100 held: full
  EXPECT_TRUE(f.next());
  // 101 bytes announced: more than may be held, so the stream is broken at the prefix and
  // nothing more is buffered.
  const Bytes too_long = framed({message(2, 101)});
  EXPECT_EQ(f.feed(too_long), 102u);  // what fits is taken; the prefix then breaks it
  EXPECT_FALSE(f.next());
  EXPECT_TRUE(f.broken());
  EXPECT_EQ(f.room(), 0u);
  EXPECT_TRUE(f.write_area(10).empty());
  f.reset();
  EXPECT_FALSE(f.broken());
  EXPECT_TRUE(f.empty());
  ASSERT_EQ(f.feed(ok), ok.size());
  EXPECT_TRUE(f.next());
}

TEST(StreamFramer, AMessageStaysValidAndWritableUntilTheNextRead) {
  StreamFramer f;
  const Bytes s = framed({message(1, 20), message(2, 30)});
  ASSERT_EQ(f.feed(s), s.size());
  auto a = f.next();
  auto b = f.next();
  ASSERT_TRUE(a && b);
  (*a)[0] = 0xee;  // a DoT answer is handed on mutable (its ID and case are restored in place)
  EXPECT_EQ((*a)[0], 0xee);
  EXPECT_EQ(Bytes(b->begin(), b->end()), message(2, 30));
}

TEST(StreamFramer, AppendFramedPrefixesTheLengthAndRefusesWhatAPrefixCannotSay) {
  Bytes out;
  EXPECT_TRUE(StreamFramer::append_framed(out, message(3, 5)));
  EXPECT_EQ(out, framed({message(3, 5)}));
  const Bytes big(65536, 1);
  EXPECT_FALSE(StreamFramer::append_framed(out, big));
  EXPECT_EQ(out.size(), 7u);  // unchanged
  EXPECT_TRUE(StreamFramer::append_framed(out, Bytes(65535, 2)));
  EXPECT_EQ(out.size(), 7u + 2u + 65535u);
  StreamFramer f;
  ASSERT_EQ(f.feed(out), 2u + 65535u);  // the cap: the size of one largest message
  ASSERT_TRUE(f.next());
  EXPECT_EQ(f.feed(std::span<const uint8_t>(out).subspan(2 + 65535)), 7u);
  const auto m = f.next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size(), 65535u);
}

}  // namespace
}  // namespace hg::resolver
