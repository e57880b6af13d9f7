// WireWriter: the size limit, case-preserving name compression, and rollback to a record
// boundary (the basis of TC=1 truncation).
#include "wire/writer.h"

#include <gtest/gtest.h>

#include "tests/wire/packet_builder.h"
#include "tests/wire/test_names.h"

namespace hg::wire {
namespace {

using test::Bytes;
using test::N;

TEST(WireWriter, RefusesToExceedTheLimit) {
  Bytes buf(64);
  WireWriter w(buf, 5);
  EXPECT_EQ(w.limit(), 5u);
  EXPECT_TRUE(w.u32(0xdeadbeef));
  EXPECT_FALSE(w.u16(1));  // would need 6 octets
  EXPECT_EQ(w.size(), 4u);
  EXPECT_TRUE(w.u8(7));
  EXPECT_FALSE(w.u8(8));
  EXPECT_FALSE(w.bytes(Bytes{1}));
  EXPECT_FALSE(w.name(N(".")));
  EXPECT_EQ(w.room(), 0u);
  EXPECT_EQ(Bytes(w.written().begin(), w.written().end()), (Bytes{0xde, 0xad, 0xbe, 0xef, 7}));
  WireWriter capped(buf, 1000);
  EXPECT_EQ(capped.limit(), 64u);  // never past the buffer
}

TEST(WireWriter, CompressesRepeatedSuffixes) {
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.bytes(Bytes(12, 0)));          // the header
  ASSERT_TRUE(w.name(N("www.example.com")));   // 17 octets at 12
  ASSERT_TRUE(w.name(N("mail.example.com")));  // "mail" + pointer to 16
  EXPECT_EQ(w.size(), 12u + 17 + 5 + 2);
  EXPECT_EQ(buf[34], 0xC0);
  EXPECT_EQ(buf[35], 16);
  ASSERT_TRUE(w.name(N("www.example.com")));  // a bare pointer to 12
  EXPECT_EQ(w.size(), 38u);
  EXPECT_EQ(buf[36], 0xC0);
  EXPECT_EQ(buf[37], 12);
  ASSERT_TRUE(w.name(N("a.mail.example.com")));  // "a" + pointer to "mail..." at 29
  EXPECT_EQ(buf[40], 0xC0);
  EXPECT_EQ(buf[41], 29);
  // The result decodes back to the same names.
  WireReader r(w.written(), 29);
  auto back = read_name(r);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->to_text(), "mail.example.com.");
}

TEST(WireWriter, NeverPointsIntoTheHeader) {
  // A name written in the first 12 octets is not a target: read_name would reject the
  // pointer (PointerIntoHeader).
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.name(N("example.com")));  // 13 octets at 0
  ASSERT_TRUE(w.name(N("example.com")));  // at 13: written in full, "com" at 21 is new
  EXPECT_EQ(w.size(), 26u);
  ASSERT_TRUE(w.name(N("com")));  // a pointer to 21
  EXPECT_EQ(w.size(), 28u);
}

TEST(WireWriter, CompressionPreservesLetterCase) {
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.bytes(Bytes(12, 0)));
  ASSERT_TRUE(w.name(N("www.example.com")));
  const std::size_t second = w.size();
  ASSERT_TRUE(w.name(N("WWW.Example.com")));  // only "com" may be shared
  WireReader r(w.written(), second);
  auto back = read_name(r);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->identical(N("WWW.Example.com")));
  EXPECT_EQ(w.size() - second, 4u + 8 + 2);
}

TEST(WireWriter, WritesUncompressedWhenAsked) {
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.name(N("example.com")));
  ASSERT_TRUE(w.name(N("example.com"), /*compress=*/false));
  EXPECT_EQ(w.size(), 26u);
}

TEST(WireWriter, RollbackForgetsCompressionTargets) {
  Bytes buf(512);
  WireWriter w(buf);
  ASSERT_TRUE(w.name(N("a.example")));
  const auto mark = w.mark();
  ASSERT_TRUE(w.name(N("other.test")));
  w.rollback(mark);
  EXPECT_EQ(w.size(), mark);
  // "other.test" must not compress against the rolled-back bytes.
  ASSERT_TRUE(w.name(N("x.other.test")));
  EXPECT_EQ(w.size(), mark + 14);
  w.rollback(w.size() + 10);  // a mark past the end is a no-op
  EXPECT_EQ(w.size(), mark + 14);
}

TEST(WireWriter, SetLimitNeverCutsWrittenBytes) {
  Bytes buf(64);
  WireWriter w(buf);
  ASSERT_TRUE(w.u32(1));
  w.set_limit(2);
  EXPECT_EQ(w.limit(), 4u);
  EXPECT_FALSE(w.u8(0));
  w.set_limit(100);
  EXPECT_EQ(w.limit(), 64u);
}

TEST(WireWriter, PatchesWrittenFieldsOnly) {
  Bytes buf(8);
  WireWriter w(buf);
  ASSERT_TRUE(w.u16(0));
  w.patch_u16(0, 0xABCD);
  w.patch_u16(1, 0x1111);  // would reach past what was written: ignored
  EXPECT_EQ(buf[0], 0xAB);
  EXPECT_EQ(buf[1], 0xCD);
}

}  // namespace
}  // namespace hg::wire
