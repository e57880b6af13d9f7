// Name: text form with escapes, RFC 4343 comparison, and read_name's pointer and length rules.
#include "wire/name.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <unordered_set>

#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"
#include "wire/ascii_words.h"

namespace hg::wire {
namespace {

using test::Bytes;
using test::N;

// read_name rejects pointers into the first 12 octets (a message's header), so buffers whose
// names are pointed at start with this 12-octet pad.
constexpr std::size_t kPad = 12;
Bytes padded(std::initializer_list<uint8_t> tail) {
  Bytes b(kPad, 0);
  b.insert(b.end(), tail);
  return b;
}

// read_name on `buf` starting at `start`; returns the Result and leaves the reader's offset.
Result<Name> read_at(const Bytes& buf, std::size_t start, std::size_t* end = nullptr) {
  WireReader r(buf, start);
  auto n = read_name(r);
  if (end != nullptr) *end = r.offset();
  return n;
}

TEST(NameText, ParsesAndPrintsWithTrailingDot) {
  EXPECT_EQ(N("www.example.com").to_text(), "www.example.com.");
  EXPECT_EQ(N("www.example.com.").to_text(), "www.example.com.");
  EXPECT_EQ(N(".").to_text(), ".");
  EXPECT_TRUE(N(".").is_root());
  EXPECT_EQ(N("www.example.com").label_count(), 3);
  EXPECT_EQ(N("www.example.com").size(), 17u);
}

TEST(NameText, HandlesEscapes) {
  auto n = N("a\\.b.c\\065\\\\.");
  // Labels: "a.b" (3 octets), "cA\" (3 octets).
  const Bytes expect = {3, 'a', '.', 'b', 3, 'c', 'A', '\\', 0};
  EXPECT_EQ(Bytes(n.wire().begin(), n.wire().end()), expect);
  EXPECT_EQ(n.to_text(), "a\\.b.cA\\\\.");
  // Non-printable bytes and space come back as \DDD, as dig prints them.
  EXPECT_EQ(N("\\000\\032x\\255").to_text(), "\\000\\032x\\255.");
  EXPECT_EQ(N("a\\@\\$\\;\\(\\)\\\"").to_text(), "a\\@\\$\\;\\(\\)\\\".");
}

TEST(NameText, RejectsBadText) {
  EXPECT_EQ(Name::from_text("").error(), (Error{ParseError::EmptyLabel, 0}));
  EXPECT_EQ(Name::from_text("a..b").error(), (Error{ParseError::EmptyLabel, 2}));
  EXPECT_EQ(Name::from_text(".a").error(), (Error{ParseError::EmptyLabel, 0}));
  EXPECT_EQ(Name::from_text("ab\\").error(), (Error{ParseError::BadEscape, 2}));
  EXPECT_EQ(Name::from_text("a\\25").error(), (Error{ParseError::BadEscape, 1}));
  EXPECT_EQ(Name::from_text("a\\256").error(), (Error{ParseError::BadEscape, 1}));
  EXPECT_EQ(Name::from_text("a\\0x1").error(), (Error{ParseError::BadEscape, 1}));
}

TEST(NameText, AcceptsLabelOf63AndRejects64) {
  EXPECT_TRUE(Name::from_text(std::string(63, 'a') + ".com").has_value());
  auto e = Name::from_text(std::string(64, 'a') + ".com");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error(), (Error{ParseError::LabelTooLong, 63}));
}

TEST(NameText, AcceptsMaximum255OctetNameAndRejects256) {
  // 3 x (1+63) + (1+61) + root = 255 octets.
  auto ok = Name::from_text(test::long_name({63, 63, 63, 61}));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->size(), 255u);
  auto bad = Name::from_text(test::long_name({63, 63, 63, 62}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ParseError::NameTooLong);
}

TEST(NameText, RoundTripsEveryByteValue) {
  std::string text;
  for (int c = 0; c < 256; c += 4) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\%03d", c);
    text += buf;
    if (c % 60 == 56) text += ".";
  }
  auto n = N(text);
  auto again = N(n.to_text());
  EXPECT_TRUE(again.identical(n));
}

// The eight-bytes-at-a-time letter tests against the byte-wise ones: every byte value in
// every position of a word, beside neighbours that are letters, edges and high bytes.
TEST(AsciiWords, LetterAndRangeTestsAgreeWithTheByteWiseTestsForEveryByte) {
  namespace aw = ascii_words;
  const std::array<uint8_t, 8> around = {'A', 'z', '@', '[', '`', '{', 0xc1, 0xff};
  for (unsigned pos = 0; pos < 8; ++pos) {
    for (unsigned v = 0; v < 256; ++v) {
      for (uint8_t fill : around) {
        std::array<uint8_t, 8> bytes;
        bytes.fill(fill);
        bytes[pos] = static_cast<uint8_t>(v);
        const uint64_t w = aw::load(bytes.data());
        std::array<uint8_t, 8> upper, letters;
        aw::store(upper.data(), aw::in_range(w, 'A', 'Z'));
        aw::store(letters.data(), aw::letters(w));
        for (unsigned j = 0; j < 8; ++j) {
          const uint8_t c = bytes[j];
          const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
          ASSERT_EQ(upper[j], c >= 'A' && c <= 'Z' ? 0x80 : 0)
              << "byte " << unsigned{c} << " at " << j;
          ASSERT_EQ(letters[j], letter ? 0x20 : 0) << "byte " << unsigned{c} << " at " << j;
        }
      }
    }
  }
}

TEST(NameCompare, LowercasedFoldsEveryLetterOfALongNameAndNothingElse) {
  // 255 octets: labels of 63, 63, 63 and 61 bytes cycling through letters, digits, '-',
  // '_' and high bytes, so every word of the fast path and the byte-wise tail is used.
  Bytes wire;
  uint8_t c = 0x21;
  for (std::size_t len : {63, 63, 63, 61}) {
    wire.push_back(static_cast<uint8_t>(len));
    for (std::size_t i = 0; i < len; ++i, c = static_cast<uint8_t>(c == 0xfe ? 0x21 : c + 1))
      wire.push_back(c == '.' ? uint8_t{'A'} : c);
  }
  wire.push_back(0);
  ASSERT_EQ(wire.size(), 255u);
  auto n = Name::from_wire(wire);
  ASSERT_TRUE(n.has_value());
  const Name low = n->lowercased();
  ASSERT_EQ(low.size(), 255u);
  for (std::size_t i = 0; i < wire.size(); ++i)
    EXPECT_EQ(low.wire()[i], ascii_lower(wire[i])) << i;
  EXPECT_EQ(low, *n);
}

TEST(NameCompare, IgnoresCaseButPreservesIt) {
  auto a = N("WWW.Example.COM");
  auto b = N("www.example.com");
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.identical(b));
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.to_text(), "WWW.Example.COM.");
  EXPECT_TRUE(a.lowercased().identical(b));
  EXPECT_NE(N("www.example.com"), N("www.example.org"));
  // Only ASCII letters fold (RFC 4343 §3): 0xC4 and 0xE4 stay distinct.
  EXPECT_NE(N("\\196"), N("\\228"));
  std::unordered_set<Name, NameHash> set{a};
  EXPECT_TRUE(set.contains(b));
}

TEST(NameCompare, OrdersCanonicallyFromTheRoot) {
  // RFC 4034 §6.1's example order.
  const char* sorted[] = {"example",         "a.example",      "yljkjljk.a.example",
                          "Z.a.example",     "zABC.a.EXAMPLE", "z.example",
                          "\\001.z.example", "*.z.example",    "\\200.z.example"};
  for (std::size_t i = 0; i + 1 < std::size(sorted); ++i) {
    EXPECT_LT(N(sorted[i]), N(sorted[i + 1])) << sorted[i] << " < " << sorted[i + 1];
  }
  EXPECT_EQ(N("A.example") <=> N("a.EXAMPLE"), std::strong_ordering::equal);
  EXPECT_LT(N("."), N("com"));
  std::set<Name> s{N("b.com"), N("A.com"), N("a.COM")};
  EXPECT_EQ(s.size(), 2u);
}

TEST(NameSubdomain, MatchesOnLabelBoundariesOnly) {
  EXPECT_TRUE(N("a.b.example.com").is_subdomain_of(N("example.com")));
  EXPECT_TRUE(N("example.com").is_subdomain_of(N("EXAMPLE.com")));
  EXPECT_TRUE(N("example.com").is_subdomain_of(N(".")));
  EXPECT_FALSE(N("badexample.com").is_subdomain_of(N("example.com")));
  EXPECT_FALSE(N("com").is_subdomain_of(N("example.com")));
  EXPECT_FALSE(N("example.com.org").is_subdomain_of(N("example.com")));
}

TEST(NameParent, DropsLeadingLabels) {
  EXPECT_EQ(N("a.b.example.com").parent().to_text(), "b.example.com.");
  EXPECT_EQ(N("a.b.example.com").parent(2).to_text(), "example.com.");
  EXPECT_TRUE(N("a.b").parent(5).is_root());
}

TEST(NameFromWire, RejectsPointersAndTrailingBytes) {
  EXPECT_TRUE(Name::from_wire(test::wire_name("a.b")).has_value());
  EXPECT_EQ(Name::from_wire(Bytes{1, 'a', 0, 0}).error().code, ParseError::TrailingBytes);
  EXPECT_FALSE(Name::from_wire(Bytes{1, 'a', 0xC0, 0}).has_value());
}

TEST(ReadName, DecompressesBackwardPointers) {
  // "example.com" at 12, then "www" + pointer to 12 at 25.
  Bytes buf(kPad, 0);
  const auto ex = test::wire_name("example.com");
  buf.insert(buf.end(), ex.begin(), ex.end());
  buf.insert(buf.end(), {3, 'w', 'w', 'w', 0xC0, kPad});
  std::size_t end = 0;
  auto n = read_at(buf, 25, &end);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->to_text(), "www.example.com.");
  EXPECT_EQ(end, buf.size());  // the reader stops after the first pointer
}

TEST(ReadName, RejectsPointerIntoHeader) {
  // A backward pointer to offset 5: inside the header, never a name (the ID and flags would
  // decode as labels, and change when a responder rewrites them).
  const Bytes buf = padded({0xC0, 0x05});
  EXPECT_EQ(read_at(buf, kPad).error(), (Error{ParseError::PointerIntoHeader, kPad}));
}

TEST(ReadName, RejectsAJumpWhoseNameRunsThroughThePointer) {
  // 12: 00 | 13: 01 | 14: C0 0D (pointer to 13) | 16: 00. Reading at 14 jumps back to 13: a
  // label of length 1 whose content is the pointer's own first byte, then 0x0D at 15 as the
  // next length. The pointer is backward, but the name it leads to runs through the pointer
  // itself (and beyond), so its meaning changes when those bytes do (a rewritten TTL).
  const Bytes buf = padded({0x00, 0x01, 0xC0, 0x0D, 0x00});
  EXPECT_EQ(read_at(buf, 14).error(), (Error{ParseError::PointerNotBackward, 14}));
}

TEST(ReadName, AcceptsAJumpToANameThatEndsBeforeThePointer) {
  // 12: 01 'a' 00 | 15: 01 'b' C0 0C  → "b.a."
  const Bytes buf = padded({0x01, 'a', 0x00, 0x01, 'b', 0xC0, 0x0C});
  auto n = read_at(buf, 15);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->to_text(), "b.a.");
}

TEST(ReadName, RejectsSelfPointer) {
  const Bytes buf = {0, 0, 0xC0, 0x02};  // the pointer at 2 points at itself
  EXPECT_EQ(read_at(buf, 2).error(), (Error{ParseError::PointerNotBackward, 2}));
}

TEST(ReadName, RejectsTwoPointerCycle) {
  // At 12: pointer to 14. At 14: pointer to 12. Reading from 14 jumps to 12 (backward,
  // allowed), whose pointer to 14 is not before the current part (12): rejected at 12.
  const Bytes buf = padded({0xC0, 14, 0xC0, 12});
  EXPECT_EQ(read_at(buf, 14).error(), (Error{ParseError::PointerNotBackward, 12}));
  EXPECT_EQ(read_at(buf, 12).error(), (Error{ParseError::PointerNotBackward, 12}));
}

TEST(ReadName, RejectsForwardPointer) {
  const Bytes buf = {0xC0, 0x04, 0, 0, 1, 'a', 0};
  EXPECT_EQ(read_at(buf, 0).error(), (Error{ParseError::PointerNotBackward, 0}));
}

TEST(ReadName, RejectsPointerIntoTheSameName) {
  // "a" then a pointer to the label "a" itself: backward in bytes, but inside the current part.
  const Bytes buf = {1, 'a', 0xC0, 0x00};
  EXPECT_EQ(read_at(buf, 0).error(), (Error{ParseError::PointerNotBackward, 2}));
}

TEST(ReadName, RejectsTooManyPointers) {
  // A root label at 12, then 200 pointers each pointing at the previous one.
  Bytes buf = padded({0});
  for (int i = 0; i < 200; ++i) {
    const std::size_t prev = i == 0 ? kPad : kPad + 1 + 2 * static_cast<std::size_t>(i - 1);
    buf.push_back(static_cast<uint8_t>(0xC0 | (prev >> 8)));
    buf.push_back(static_cast<uint8_t>(prev));
  }
  // From the last pointer (199), pointer k is hop 200 - k: hop 128 is pointer 72.
  auto r = read_at(buf, buf.size() - 2);
  EXPECT_EQ(r.error(), (Error{ParseError::TooManyPointers, kPad + 1 + 2 * 72}));
  // 127 hops is the most a legal name needs, and is accepted.
  EXPECT_TRUE(read_at(buf, kPad + 1 + 2 * 126).has_value());
}

TEST(ReadName, AcceptsMaximum255OctetName) {
  auto wire = test::wire_name(test::long_name({63, 63, 63, 61}));
  ASSERT_EQ(wire.size(), 255u);
  auto n = read_at(wire, 0);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->size(), 255u);
}

TEST(ReadName, RejectsName256Octets) {
  auto wire = test::wire_name(test::long_name({63, 63, 63, 62}));
  ASSERT_EQ(wire.size(), 256u);
  // The fourth label (at 192) would leave no room for the root label.
  EXPECT_EQ(read_at(wire, 0).error(), (Error{ParseError::NameTooLong, 192}));
}

TEST(ReadName, RejectsLongNameBuiltFromPointers) {
  // Two 127-octet halves joined by a pointer: 254 + root would be 255, add one more label.
  Bytes buf(kPad, 0);
  const auto first = test::wire_name(test::long_name({63, 63}));  // 129 octets at 12
  buf.insert(buf.end(), first.begin(), first.end());
  const std::size_t second = buf.size();
  auto more = test::wire_name(test::long_name({63, 61, 1}));
  more.pop_back();  // drop the root: continue into the first name
  buf.insert(buf.end(), more.begin(), more.end());
  buf.insert(buf.end(), {0xC0, kPad});
  EXPECT_EQ(read_at(buf, second).error().code, ParseError::NameTooLong);
}

TEST(ReadName, Label63IsOkAnd64IsABadLabelType) {
  Bytes ok = {63};
  ok.insert(ok.end(), 63, 'a');
  ok.push_back(0);
  EXPECT_TRUE(read_at(ok, 0).has_value());
  // A length byte of 64 is 0b01000000: the top bits 01 make it an (extended, RFC 6891 §5)
  // label type, not a length, so the decoder reports BadLabelType. LabelTooLong cannot
  // arise from wire data; it is raised for presentation text (see NameText above).
  Bytes bad = {64};
  bad.insert(bad.end(), 64, 'a');
  bad.push_back(0);
  EXPECT_EQ(read_at(bad, 0).error(), (Error{ParseError::BadLabelType, 0}));
  EXPECT_EQ(read_at(Bytes{0x80, 0}, 0).error(), (Error{ParseError::BadLabelType, 0}));
}

TEST(ReadName, ReportsTruncation) {
  EXPECT_EQ(read_at(Bytes{}, 0).error(), (Error{ParseError::Truncated, 0}));
  EXPECT_EQ(read_at(Bytes{3, 'a', 'b'}, 0).error(), (Error{ParseError::Truncated, 0}));
  EXPECT_EQ(read_at(Bytes{1, 'a'}, 0).error(), (Error{ParseError::Truncated, 2}));
  EXPECT_EQ(read_at(Bytes{0, 0xC0}, 1).error(), (Error{ParseError::Truncated, 1}));
}

TEST(SkipName, AgreesWithReadName) {
  Bytes buf(kPad, 0);
  const auto ex = test::wire_name("example.com");
  buf.insert(buf.end(), ex.begin(), ex.end());
  buf.insert(buf.end(), {3, 'w', 'w', 'w', 0xC0, kPad});
  WireReader r(buf, 25);
  ASSERT_TRUE(skip_name(r).has_value());
  EXPECT_EQ(r.offset(), buf.size());
  const Bytes hostile = {0xC0, 0x00};
  WireReader bad(hostile, 0);
  EXPECT_EQ(skip_name(bad).error(), (Error{ParseError::PointerNotBackward, 0}));
}

}  // namespace
}  // namespace hg::wire
