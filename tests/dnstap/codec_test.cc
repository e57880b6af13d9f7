#include "dnstap/codec.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "dnstap/dnstap.pb-c.h"

namespace hg::dnstap {
namespace {

std::vector<uint8_t> bytes_of(std::string_view s) {
  return {s.begin(), s.end()};
}
std::vector<uint8_t> vec(std::span<const uint8_t> s) {
  return {s.begin(), s.end()};
}

// A response as hourglassd writes it: every field it sets, IPv6 addresses.
struct Sample {
  std::array<uint8_t, 16> client{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::array<uint8_t, 16> server{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::vector<uint8_t> query = bytes_of("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00query");
  std::vector<uint8_t> response = std::vector<uint8_t>(300, 0xab);
  std::vector<uint8_t> zone = bytes_of(std::string_view("\x04test\x00", 6));
  std::vector<uint8_t> identity = bytes_of("ns1.hg.test");
  std::vector<uint8_t> version = bytes_of("hourglass 0.1.0");

  Message full() const {
    Message m;
    m.type = MessageType::ClientResponse;
    m.family = Family::Inet6;
    m.protocol = Protocol::Tcp;
    m.query_address = client;
    m.response_address = server;
    m.query_port = 54321;
    m.response_port = 53;
    m.query_time = Timestamp{1'700'000'000, 123'456'789};
    m.response_time = Timestamp{1'700'000'001, 999'999'999};
    m.query_message = query;
    m.response_message = response;
    m.query_zone = zone;
    m.identity = identity;
    m.version = version;
    return m;
  }
};

void expect_same(const Message& a, const Message& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.protocol, b.protocol);
  EXPECT_EQ(vec(a.query_address), vec(b.query_address));
  EXPECT_EQ(vec(a.response_address), vec(b.response_address));
  EXPECT_EQ(a.query_port, b.query_port);
  EXPECT_EQ(a.response_port, b.response_port);
  EXPECT_EQ(a.query_time, b.query_time);
  EXPECT_EQ(a.response_time, b.response_time);
  EXPECT_EQ(vec(a.query_message), vec(b.query_message));
  EXPECT_EQ(vec(a.response_message), vec(b.response_message));
  EXPECT_EQ(vec(a.query_zone), vec(b.query_zone));
  EXPECT_EQ(vec(a.identity), vec(b.identity));
  EXPECT_EQ(vec(a.version), vec(b.version));
}

TEST(DnstapCodec, FullMessageRoundTrips) {
  Sample s;
  const Message in = s.full();
  std::vector<uint8_t> frame;
  encode(in, frame);
  EXPECT_EQ(frame.size(),
            measure_prefixed(in, encode_prefix(in.identity, in.version).size()).total);

  Message out;
  ASSERT_EQ(decode(frame, out), DecodeStatus::Ok);
  expect_same(in, out);
  // Decoded in place: the spans point into the frame, not into the sample.
  const auto inside = [&](std::span<const uint8_t> b) {
    return b.data() >= frame.data() && b.data() + b.size() <= frame.data() + frame.size();
  };
  EXPECT_TRUE(inside(out.response_message));
  EXPECT_TRUE(inside(out.query_message));
  EXPECT_TRUE(inside(out.query_address));
  EXPECT_TRUE(inside(out.identity));
}

TEST(DnstapCodec, MinimalMessageLeavesEverythingAbsent) {
  Message in;
  in.type = MessageType::ForwarderQuery;
  std::vector<uint8_t> frame;
  encode(in, frame);
  Message out;
  out.query_port = 7;  // decode resets what it does not set
  ASSERT_EQ(decode(frame, out), DecodeStatus::Ok);
  EXPECT_EQ(out.type, MessageType::ForwarderQuery);
  EXPECT_FALSE(out.family);
  EXPECT_FALSE(out.protocol);
  EXPECT_FALSE(out.query_port);
  EXPECT_FALSE(out.response_port);
  EXPECT_FALSE(out.query_time);
  EXPECT_FALSE(out.response_time);
  EXPECT_TRUE(out.query_address.empty());
  EXPECT_TRUE(out.query_message.empty());
  EXPECT_TRUE(out.response_message.empty());
  EXPECT_TRUE(out.identity.empty());
  EXPECT_TRUE(out.version.empty());
}

TEST(DnstapCodec, EveryTypeRoundTrips) {
  for (int t = 1; t <= 14; ++t) {
    Message in;
    in.type = static_cast<MessageType>(t);
    in.family = Family::Inet;
    in.protocol = Protocol::Udp;
    std::vector<uint8_t> frame;
    encode(in, frame);
    Message out;
    ASSERT_EQ(decode(frame, out), DecodeStatus::Ok) << t;
    EXPECT_EQ(out.type, in.type);
    EXPECT_EQ(is_query(out.type), t % 2 == 1);
    EXPECT_NE(to_string(out.type), "UNKNOWN");
  }
  EXPECT_EQ(to_string(MessageType::ClientQuery), "CLIENT_QUERY");
  EXPECT_EQ(to_string(MessageType::ForwarderResponse), "FORWARDER_RESPONSE");
}

// Our hand-written packer must produce exactly what protobuf-c's reflective packer does.
TEST(DnstapCodec, BytesEqualProtobufC) {
  Sample s;
  const Message in = s.full();
  std::vector<uint8_t> ours;
  encode(in, ours);

  Dnstap__Message m = DNSTAP__MESSAGE__INIT;
  m.type = DNSTAP__MESSAGE__TYPE__CLIENT_RESPONSE;
  m.has_socket_family = 1;
  m.socket_family = DNSTAP__SOCKET_FAMILY__INET6;
  m.has_socket_protocol = 1;
  m.socket_protocol = DNSTAP__SOCKET_PROTOCOL__TCP;
  m.has_query_address = 1;
  m.query_address = {s.client.size(), s.client.data()};
  m.has_response_address = 1;
  m.response_address = {s.server.size(), s.server.data()};
  m.has_query_port = 1;
  m.query_port = 54321;
  m.has_response_port = 1;
  m.response_port = 53;
  m.has_query_time_sec = 1;
  m.query_time_sec = 1'700'000'000;
  m.has_query_time_nsec = 1;
  m.query_time_nsec = 123'456'789;
  m.has_response_time_sec = 1;
  m.response_time_sec = 1'700'000'001;
  m.has_response_time_nsec = 1;
  m.response_time_nsec = 999'999'999;
  m.has_query_message = 1;
  m.query_message = {s.query.size(), s.query.data()};
  m.has_response_message = 1;
  m.response_message = {s.response.size(), s.response.data()};
  m.has_query_zone = 1;
  m.query_zone = {s.zone.size(), s.zone.data()};
  Dnstap__Dnstap top = DNSTAP__DNSTAP__INIT;
  top.has_identity = 1;
  top.identity = {s.identity.size(), s.identity.data()};
  top.has_version = 1;
  top.version = {s.version.size(), s.version.data()};
  top.type = DNSTAP__DNSTAP__TYPE__MESSAGE;
  top.message = &m;
  std::vector<uint8_t> theirs(dnstap__dnstap__get_packed_size(&top));
  ASSERT_EQ(dnstap__dnstap__pack(&top, theirs.data()), theirs.size());
  EXPECT_EQ(ours, theirs);
}

TEST(DnstapCodec, PrefixedFramesEqualPlainOnes) {
  Sample s;
  // Every combination of identity and version present or absent, IPv4 and IPv6, with and
  // without the optional fields: the prefixed frame is byte for byte the plain one.
  const std::array<uint8_t, 4> v4{192, 0, 2, 7};
  for (int variant = 0; variant < 16; ++variant) {
    Message m = s.full();
    if ((variant & 1) != 0) m.identity = {};
    if ((variant & 2) != 0) m.version = {};
    if ((variant & 4) != 0) {
      m.family = Family::Inet;
      m.query_address = v4;
      m.response_address = {};
    }
    if ((variant & 8) != 0) {
      m.query_port.reset();
      m.response_time.reset();
      m.query_zone = {};
      m.response_message = {};
    }
    std::vector<uint8_t> plain;
    encode(m, plain);
    const std::vector<uint8_t> prefix = encode_prefix(m.identity, m.version);
    Message other = m;  // what the message itself says is ignored: the prefix counts
    other.identity = bytes_of("not this one");
    other.version = {};
    const EncodedSize size = measure_prefixed(other, prefix.size());
    ASSERT_EQ(size.total, plain.size()) << "variant " << variant;
    std::vector<uint8_t> got(size.total + 1, 0xee);
    encode_prefixed(other, size, prefix, got.data());
    EXPECT_EQ(got.back(), 0xee) << "variant " << variant;  // nothing past the frame
    got.pop_back();
    EXPECT_EQ(got, plain) << "variant " << variant;
    // In one pass: fits exactly, or writes nothing usable and says so.
    std::vector<uint8_t> once(plain.size() + 1, 0xee);
    EXPECT_EQ(encode_prefixed(other, prefix, std::span<uint8_t>(once.data(), plain.size() - 1)),
              0U);
    ASSERT_EQ(encode_prefixed(other, prefix, std::span<uint8_t>(once)), plain.size());
    EXPECT_EQ(once.back(), 0xee);
    once.pop_back();
    EXPECT_EQ(once, plain) << "variant " << variant;
    // With room to spare the fields are written before their length is known (then moved
    // when the length takes more than one byte): the same bytes again.
    std::vector<uint8_t> roomy(plain.size() + 1024, 0xee);
    ASSERT_EQ(encode_prefixed(other, prefix, std::span<uint8_t>(roomy)), plain.size());
    EXPECT_EQ(roomy[plain.size()], 0xee);
    roomy.resize(plain.size());
    EXPECT_EQ(roomy, plain) << "variant " << variant;
  }
  // A Message of 16384 bytes or more: a three-byte length.
  Message big = s.full();
  const std::vector<uint8_t> large(20000, 0x5a);
  big.response_message = large;
  std::vector<uint8_t> plain;
  encode(big, plain);
  const std::vector<uint8_t> prefix = encode_prefix(big.identity, big.version);
  std::vector<uint8_t> roomy(plain.size() + 1024);
  ASSERT_EQ(encode_prefixed(big, prefix, std::span<uint8_t>(roomy)), plain.size());
  roomy.resize(plain.size());
  EXPECT_EQ(roomy, plain);
}

TEST(DnstapCodec, LargeFieldsAndDecoderReuse) {
  Message out;
  std::vector<uint8_t> big(65535, 0x5a);
  Message a;
  a.type = MessageType::ClientResponse;
  a.response_message = big;
  std::vector<uint8_t> fa;
  encode(a, fa);
  ASSERT_EQ(decode(fa, out), DecodeStatus::Ok);
  EXPECT_EQ(out.response_message.size(), big.size());

  Sample s;
  const Message b = s.full();
  std::vector<uint8_t> fb;
  encode(b, fb);
  ASSERT_EQ(decode(fb, out), DecodeStatus::Ok);
  expect_same(b, out);
}

TEST(DnstapCodec, UnknownFieldsAreSkipped) {
  Sample s;
  std::vector<uint8_t> frame;
  encode(s.full(), frame);
  // Dnstap.extra (3, bytes) and a field 99 (varint) that the schema does not know.
  const std::array<uint8_t, 5> extra{0x1a, 0x03, 'x', 'y', 'z'};
  const std::array<uint8_t, 3> unknown{0x98, 0x06, 0x2a};
  frame.insert(frame.begin(), extra.begin(), extra.end());
  frame.insert(frame.end(), unknown.begin(), unknown.end());
  Message out;
  ASSERT_EQ(decode(frame, out), DecodeStatus::Ok);
  expect_same(s.full(), out);
}

TEST(DnstapCodec, NotAMessage) {
  // type = MESSAGE but no message field.
  const std::array<uint8_t, 2> no_message{0x78, 0x01};
  Message out;
  EXPECT_EQ(decode(no_message, out), DecodeStatus::NotMessage);
  // Missing the required Dnstap.type: malformed.
  const std::array<uint8_t, 4> no_type{0x0a, 0x02, 'i', 'd'};
  EXPECT_EQ(decode(no_type, out), DecodeStatus::Malformed);
  EXPECT_EQ(decode({}, out), DecodeStatus::Malformed);
  EXPECT_EQ(to_string(DecodeStatus::NotMessage), "not-message");
}

// protobuf-c stores any number into an enum field; the decoder must read it safely (found by
// the fuzz target: loading such a value as the C enum type is undefined behaviour).
TEST(DnstapCodec, OutOfRangeEnums) {
  Message out;
  // Message.type = 1000: not a type we can represent.
  const std::array<uint8_t, 7> big_type{0x72, 0x03, 0x08, 0xe8, 0x07, 0x78, 0x01};
  EXPECT_EQ(decode(big_type, out), DecodeStatus::Malformed);
  // Message.type = 200 and socket_family = 200: passed on as numbers.
  const std::array<uint8_t, 10> odd{0x72, 0x06, 0x08, 0xc8, 0x01, 0x10, 0xc8, 0x01, 0x78, 0x01};
  ASSERT_EQ(decode(odd, out), DecodeStatus::Ok);
  EXPECT_EQ(static_cast<int>(out.type), 200);
  EXPECT_EQ(to_string(out.type), "UNKNOWN");
  ASSERT_TRUE(out.family);
  EXPECT_EQ(static_cast<int>(*out.family), 200);
  // Dnstap.type = 2 (not MESSAGE).
  const std::array<uint8_t, 6> other{0x72, 0x02, 0x08, 0x05, 0x78, 0x02};
  EXPECT_EQ(decode(other, out), DecodeStatus::NotMessage);
}

TEST(DnstapCodec, EveryTruncationIsRejectedNotCrashed) {
  Sample s;
  std::vector<uint8_t> frame;
  encode(s.full(), frame);
  Message out;
  for (std::size_t n = 0; n < frame.size(); ++n) {
    // Cutting at a field boundary can leave a valid (shorter) message only if the required
    // Dnstap.type, written last, is still there; it never is before the full length.
    EXPECT_EQ(decode(std::span<const uint8_t>(frame.data(), n), out), DecodeStatus::Malformed)
        << "cut at " << n;
  }
}

TEST(DnstapCodec, RandomGarbageNeverCrashes) {
  Sample s;
  std::vector<uint8_t> frame;
  encode(s.full(), frame);
  std::mt19937 rng(12345);
  Message out;
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> f = frame;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      f[rng() % f.size()] = static_cast<uint8_t>(rng());
    if (decode(f, out) == DecodeStatus::Ok) {
      ++ok;
      // Whatever decoded must lie inside the decoder's memory and be readable.
      std::size_t sum = 0;
      for (uint8_t b : out.response_message)
        sum += b;
      for (uint8_t b : out.query_message)
        sum += b;
      EXPECT_GE(sum, 0U);
    }
  }
  // Most one-byte flips in a 300-byte payload land in message bytes and still decode.
  EXPECT_GT(ok, 1000);
}

}  // namespace
}  // namespace hg::dnstap
