// The in-place dnstap decoder (dnstap::decode) against the protobuf-c one it replaced
// (dnstap::ReferenceDecoder): on frames our encoder writes, on hand-made frames that reach the
// corners of the protobuf wire format, and on many mutated and truncated frames, both must
// return the same status and, when Ok, the same values.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dnstap/codec.h"
#include "tests/dnstap_reference/reference_decoder.h"

namespace hg::dnstap {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes vec(std::span<const uint8_t> s) {
  return {s.begin(), s.end()};
}

// Empty when the two results agree, else what differs.
std::string difference(DecodeStatus sa, const Message& a, DecodeStatus sb, const Message& b) {
  if (sa != sb)
    return std::string("status ") + std::string(to_string(sa)) + " vs " +
           std::string(to_string(sb));
  std::string d;
  auto field = [&](const char* name, bool same) {
    if (!same) d += std::string(name) + " ";
  };
  field("type", a.type == b.type);
  field("family", a.family == b.family);
  field("protocol", a.protocol == b.protocol);
  field("query_address", vec(a.query_address) == vec(b.query_address));
  field("response_address", vec(a.response_address) == vec(b.response_address));
  field("query_port", a.query_port == b.query_port);
  field("response_port", a.response_port == b.response_port);
  field("query_time", a.query_time == b.query_time);
  field("response_time", a.response_time == b.response_time);
  field("query_message", vec(a.query_message) == vec(b.query_message));
  field("response_message", vec(a.response_message) == vec(b.response_message));
  field("query_zone", vec(a.query_zone) == vec(b.query_zone));
  field("identity", vec(a.identity) == vec(b.identity));
  field("version", vec(a.version) == vec(b.version));
  return d;
}

std::string hex(std::span<const uint8_t> b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

struct Compare {
  ReferenceDecoder reference;
  Message a, b;
  std::size_t ok = 0, malformed = 0, not_message = 0;

  // Decodes `frame` both ways; a gtest failure (with the frame in hex) when they disagree.
  bool operator()(std::span<const uint8_t> frame) {
    // A copy the size of the frame, so that ASan sees any read past its end.
    const Bytes copy(frame.begin(), frame.end());
    const DecodeStatus sa = decode(copy, a);
    const DecodeStatus sb = reference.decode(copy, b);
    (sa == DecodeStatus::Ok ? ok : sa == DecodeStatus::Malformed ? malformed : not_message)++;
    const std::string d = difference(sa, a, sb, b);
    EXPECT_EQ(d, "") << "frame " << hex(frame);
    return d.empty();
  }
};

// A random message, as hourglassd, knotd or a tool might write it; each field present or not.
class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  Bytes frame() {
    Message m;
    m.type = static_cast<MessageType>(1 + pick(14));
    if (coin()) m.family = coin() ? Family::Inet : Family::Inet6;
    if (coin()) m.protocol = static_cast<Protocol>(1 + pick(7));
    if (coin()) m.query_address = fill(qaddr_, m.family == Family::Inet6 ? 16 : 4);
    if (coin()) m.response_address = fill(raddr_, coin() ? 4 : 16);
    if (coin()) m.query_port = static_cast<uint32_t>(pick(65536));
    if (coin()) m.response_port = 53;
    if (coin())
      m.query_time = Timestamp{1'600'000'000 + pick(1U << 30), uint32_t(pick(1000000000))};
    if (coin()) m.response_time = Timestamp{pick(UINT32_MAX) * pick(8), uint32_t(pick(UINT32_MAX))};
    if (coin()) m.query_message = fill(query_, 12 + pick(60));
    if (coin())
      m.response_message = fill(response_, pick(4) == 0 ? 200 + pick(3000) : 12 + pick(200));
    if (coin()) m.query_zone = fill(zone_, 1 + pick(30));
    if (coin()) m.identity = fill(identity_, 1 + pick(20));
    if (coin()) m.version = fill(version_, 1 + pick(20));
    Bytes f;
    encode(m, f);
    return f;
  }
  uint64_t pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool coin() { return (rng_() & 1) != 0; }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::span<const uint8_t> fill(Bytes& b, std::size_t n) {
    b.resize(n);
    for (auto& c : b)
      c = static_cast<uint8_t>(rng_());
    return b;
  }
  std::mt19937_64 rng_;
  Bytes qaddr_, raddr_, query_, response_, zone_, identity_, version_;
};

void put_varint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
void put_tag(Bytes& out, uint32_t field, uint32_t wire) {
  put_varint(out, (uint64_t{field} << 3) | wire);
}
void put_bytes(Bytes& out, uint32_t field, const Bytes& b) {
  put_tag(out, field, 2);
  put_varint(out, b.size());
  out.insert(out.end(), b.begin(), b.end());
}
Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}
// Dnstap{message = body, type = MESSAGE}.
Bytes frame_of(const Bytes& body) {
  Bytes out;
  put_bytes(out, 14, body);
  out.insert(out.end(), {0x78, 0x01});
  return out;
}

TEST(DnstapDecoderDiff, EncodedFramesAgree) {
  Generator gen(1);
  Compare cmp;
  for (int i = 0; i < 5000; ++i)
    if (!cmp(gen.frame())) break;
  EXPECT_EQ(cmp.ok, 5000U);
}

// Frames that reach the corners where protobuf-c's reading differs from a naive one.
TEST(DnstapDecoderDiff, WireFormatCornersAgree) {
  const Bytes query_type{0x08, 0x05};  // Message.type = CLIENT_QUERY
  const std::vector<Bytes> frames = {
      // The plain case and its missing pieces.
      frame_of(query_type),
      {0x72, 0x02, 0x08, 0x05},              // no Dnstap.type
      {0x78, 0x01},                          // no message
      {0x78, 0x02, 0x72, 0x02, 0x08, 0x05},  // Dnstap.type 2
      frame_of({}),                          // message without its type
      frame_of({0x10, 0x01}),                // the same with a family
      // Field number 0: as a one-byte tag an error, as a longer tag an unknown field.
      cat({{0x00, 0x00}, frame_of(query_type)}),
      cat({{0x02, 0x00}, frame_of(query_type)}),
      cat({{0x80, 0x00, 0x05}, frame_of(query_type)}),
      // Tags of 5 bytes (the most protobuf-c reads), with high field numbers; 6 bytes.
      cat({{0xf8, 0xff, 0xff, 0xff, 0x7f, 0x01}, frame_of(query_type)}),
      cat({{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01}, frame_of(query_type)}),
      cat({{0xf2, 0x80, 0x80, 0x80, 0x00, 0x00}, frame_of(query_type)}),  // 14, padded
      cat({{0xf8, 0xff, 0xff, 0xff, 0x8f, 0x01, 0x01}, frame_of(query_type)}),
      // Unknown fields of every wire type; groups and 6, 7 are errors.
      cat({frame_of(query_type), {0xa0, 0x06, 0x2a}}),
      cat({frame_of(query_type), {0xa1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8}}),
      cat({frame_of(query_type), {0xa1, 0x06, 1, 2, 3, 4, 5, 6, 7}}),
      cat({frame_of(query_type), {0xa2, 0x06, 0x02, 'h', 'i'}}),
      cat({frame_of(query_type), {0xa3, 0x06}}),
      cat({frame_of(query_type), {0xa4, 0x06}}),
      cat({frame_of(query_type), {0xa5, 0x06, 1, 2, 3, 4}}),
      cat({frame_of(query_type), {0xa5, 0x06, 1, 2, 3}}),
      cat({frame_of(query_type), {0xa6, 0x06}}),
      cat({frame_of(query_type), {0xa7, 0x06}}),
      frame_of({0x08, 0x05, 0x98, 0x06, 0x01}),        // unknown inside Message
      frame_of({0x08, 0x05, 0x9b, 0x06, 0x9c, 0x06}),  // a group inside Message
      // Known fields with the wrong wire type.
      {0x72, 0x02, 0x08, 0x05, 0x7d, 1, 0, 0, 0},
      cat({frame_of(query_type), {0x18, 0x01}}),  // extra as a varint
      cat({frame_of(query_type), {0x1a, 0x01, 'x'}}),
      cat({frame_of(query_type), {0x08, 0x01}}),             // identity as a varint
      frame_of({0x0d, 5, 0, 0, 0}),                          // Message.type as fixed32
      frame_of({0x08, 0x05, 0x30, 0x01, 0x35, 1, 0, 0, 0}),  // port as fixed32
      frame_of({0x08, 0x05, 0x48, 0x01}),                    // nsec as a varint
      frame_of({0x08, 0x05, 0x50, 0x01}),                    // query_message as a varint
      frame_of({0x08, 0x05, 0x41, 1, 2, 3, 4, 5, 6, 7, 8}),  // sec as fixed64
      // Varints: 10 bytes with overflow bits, 11 bytes, enums and ports past 32 bits.
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
       0x00},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x81, 0x80, 0x80, 0x80, 0x10},
      frame_of({0x08, 0x85, 0x80, 0x80, 0x80, 0x10}),              // type 2^32 + 5
      frame_of({0x08, 0xff, 0xff, 0xff, 0xff, 0x0f}),              // type -1
      frame_of({0x08, 0xe8, 0x07}),                                // type 1000
      frame_of({0x08, 0x05, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f}),  // family -1
      frame_of({0x08, 0x05, 0x10, 0x00, 0x18, 0x80, 0x02}),        // family 0, protocol 256
      frame_of({0x08, 0x05, 0x30, 0x87, 0x80, 0x80, 0x80, 0x7f}),  // port with high bits
      frame_of({0x08, 0x05, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),
      frame_of({0x08, 0x05, 0x48, 0x01, 0x4d, 0xff, 0xff, 0xff, 0xff}),
      frame_of({0x08, 0x05, 0x4d, 0xff, 0xff, 0xff, 0xff}),  // nsec without sec
      // Lengths: padded, 5 bytes, 6 bytes, past the end, past 32 bits.
      cat({{0x1a, 0x80, 0x00}, frame_of(query_type)}),
      cat({{0x1a, 0x80, 0x80, 0x80, 0x80, 0x00}, frame_of(query_type)}),
      cat({{0x1a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, frame_of(query_type)}),
      cat({{0x1a, 0x80, 0x80, 0x80, 0x80, 0x10}, frame_of(query_type)}),
      cat({{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3, 4}, frame_of(query_type)}),
      cat({{0x1a, 0xfb, 0xff, 0xff, 0xff, 0x0f}, frame_of(query_type)}),
      cat({{0x0a, 0x7f}, frame_of(query_type)}),
      // Fields given twice: the last counts, an empty bytes field included.
      {0x0a, 0x01, 'a', 0x0a, 0x00, 0x72, 0x02, 0x08, 0x05, 0x78, 0x01},
      {0x0a, 0x00, 0x0a, 0x01, 'b', 0x72, 0x02, 0x08, 0x05, 0x78, 0x01},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x02, 0x78, 0x01},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x01, 0x78, 0x02},
      frame_of({0x08, 0x05, 0x52, 0x01, 'A', 0x52, 0x00}),
      frame_of({0x08, 0x05, 0x08, 0x06, 0x30, 0x01, 0x30, 0x02}),
      // Dnstap.message twice: merged; each must hold its type.
      {0x72, 0x04, 0x08, 0x05, 0x10, 0x01, 0x72, 0x02, 0x08, 0x06, 0x78, 0x01},
      {0x72, 0x02, 0x08, 0x05, 0x72, 0x02, 0x10, 0x01, 0x78, 0x01},
      {0x72, 0x02, 0x10, 0x01, 0x72, 0x02, 0x08, 0x05, 0x78, 0x01},
      {0x72, 0x05, 0x08, 0x05, 0x52, 0x01, 'A', 0x72, 0x04, 0x08, 0x06, 0x52, 0x00, 0x78, 0x01},
      {0x72, 0x05, 0x08, 0x05, 0x52, 0x01, 'A', 0x72, 0x05, 0x08, 0x06, 0x52, 0x01, 'B', 0x78,
       0x01},
      {0x72, 0x0b, 0x08, 0x05, 0x40, 0x07, 0x4d, 1,    0,    0,   0,
       0x38, 0x35, 0x72, 0x04, 0x08, 0x06, 0x40, 0x09, 0x78, 0x01},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x01, 0x72, 0x04, 0x08, 0x07, 0x22, 0x00},
      {0x72, 0x02, 0x08, 0x05, 0x78, 0x01, 0x72, 0x02, 0x08, 0x07, 0x72, 0x02, 0x08, 0x09},
  };
  Compare cmp;
  for (const Bytes& f : frames)
    cmp(f);
  // Both outcomes are exercised.
  EXPECT_GT(cmp.ok, 20U);
  EXPECT_GT(cmp.malformed, 20U);
  EXPECT_GT(cmp.not_message, 1U);
}

TEST(DnstapDecoderDiff, TruncationsAgree) {
  Generator gen(2);
  Compare cmp;
  for (int i = 0; i < 200; ++i) {
    const Bytes f = gen.frame();
    for (std::size_t n = 0; n <= f.size(); n += 1 + n / 64)
      if (!cmp(std::span<const uint8_t>(f.data(), n))) return;
  }
}

// Kept to a few thousand frames so that the ASan build stays well inside the test timeout; the
// fuzz target (tests/fuzz/dnstap_fuzz.cc) runs the same comparison on millions.
TEST(DnstapDecoderDiff, MutationsAgree) {
  Generator gen(3);
  Compare cmp;
  auto& rng = gen.rng();
  for (int i = 0; i < 8000; ++i) {
    Bytes f = gen.frame();
    // Mutations aimed at the protobuf structure, most of it in the first bytes (tags and
    // lengths) rather than in the DNS payloads.
    const int edits = 1 + static_cast<int>(gen.pick(4));
    for (int k = 0; k < edits && !f.empty(); ++k) {
      const std::size_t at =
          gen.pick(4) == 0 ? gen.pick(f.size()) : gen.pick(std::min<std::size_t>(f.size(), 48));
      switch (gen.pick(7)) {
        case 0:
          f[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          f[at] ^= static_cast<uint8_t>(1U << gen.pick(8));
          break;
        case 2:
          f.insert(f.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng()));
          break;
        case 3:
          f.erase(f.begin() + static_cast<std::ptrdiff_t>(at));
          break;
        case 4: {  // an unknown or known field of a random wire type appended
          Bytes extra;
          put_tag(extra, static_cast<uint32_t>(gen.pick(20)), static_cast<uint32_t>(gen.pick(8)));
          for (int j = 0, n = static_cast<int>(gen.pick(10)); j < n; ++j)
            extra.push_back(static_cast<uint8_t>(rng()));
          f.insert(f.begin() + static_cast<std::ptrdiff_t>(at), extra.begin(), extra.end());
          break;
        }
        case 5:  // a second copy of the frame: every field given twice
          f = cat({f, gen.frame()});
          break;
        default:
          f.resize(gen.pick(f.size() + 1));
          break;
      }
    }
    if (!cmp(f)) break;
  }
  // The mutations reach all three outcomes.
  EXPECT_GT(cmp.ok, 500U);
  EXPECT_GT(cmp.malformed, 500U);
  EXPECT_GT(cmp.not_message, 2U);
}

}  // namespace
}  // namespace hg::dnstap
