// rewrite_without_opt: the same bytes and outcome as write_message() of the owned model with
// its EDNS removed, on every captured vector, with room to spare and in small buffers.
#include "wire/reencode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/wire/vectors.h"

namespace hg::wire {
namespace {

// The view rewrite_without_opt built is the one a Strict parse of its output gives.
void expect_view_of(const Message& view, std::span<const uint8_t> written) {
  Message parsed;
  ASSERT_TRUE(parsed.parse(written, ParseMode::Strict).has_value());
  EXPECT_TRUE(std::ranges::equal(view.packet(), written));
  EXPECT_EQ(view.header().id, parsed.header().id);
  EXPECT_EQ(view.header().flags, parsed.header().flags);
  EXPECT_EQ(view.header().qdcount, parsed.header().qdcount);
  EXPECT_EQ(view.header().ancount, parsed.header().ancount);
  EXPECT_EQ(view.header().nscount, parsed.header().nscount);
  EXPECT_EQ(view.header().arcount, parsed.header().arcount);
  EXPECT_FALSE(view.edns().has_value());
  ASSERT_EQ(view.questions().size(), parsed.questions().size());
  for (std::size_t i = 0; i < view.questions().size(); ++i) {
    const Question &a = view.questions()[i], &b = parsed.questions()[i];
    EXPECT_TRUE(a.name.identical(b.name));
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.klass, b.klass);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.end, b.end);
  }
  for (const Section s : {Section::Answer, Section::Authority, Section::Additional}) {
    const auto a = view.section(s), b = parsed.section(s);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].offset, b[i].offset);
      EXPECT_EQ(a[i].ttl_offset, b[i].ttl_offset);
      EXPECT_EQ(a[i].rdata_offset, b[i].rdata_offset);
      EXPECT_EQ(a[i].rdlength, b[i].rdlength);
      EXPECT_EQ(a[i].type, b[i].type);
      EXPECT_EQ(a[i].klass, b[i].klass);
      EXPECT_EQ(a[i].ttl, b[i].ttl);
    }
  }
}

// Both writers into buffers of `limit` bytes; expects the same outcome and bytes.
void expect_same(const Message& m, std::size_t limit) {
  auto owned = to_owned(m);
  ASSERT_TRUE(owned.has_value());
  owned->edns.reset();
  std::vector<uint8_t> a(limit), b(limit);
  WireWriter wa(a), wb(b);
  const auto oa = write_message(wa, *owned);
  Message view;
  const auto ob = rewrite_without_opt(wb, m, &view);
  EXPECT_EQ(oa.ok, ob.ok);
  EXPECT_EQ(oa.truncated, ob.truncated);
  EXPECT_EQ(oa.records, ob.records);
  if (oa.ok) {
    EXPECT_TRUE(std::ranges::equal(wa.written(), wb.written()));
    expect_view_of(view, wb.written());
  }
}

TEST(RewriteWithoutOpt, SameBytesAsTheOwnedModelOnEveryVector) {
  const auto names = test::vector_names();
  ASSERT_GE(names.size(), 20u);
  int with_opt = 0, truncated = 0;
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const auto packet = test::read_vector(name);
    Message m;
    ASSERT_TRUE(m.parse(packet, ParseMode::Lenient).has_value());
    if (m.edns()) ++with_opt;
    expect_same(m, 65535);
    // Every smaller size down to the bare header: each record boundary, and too small.
    for (std::size_t limit = packet.size(); limit >= 8; --limit)
      expect_same(m, limit);
    std::vector<uint8_t> buf(packet.size() / 2 + 12);
    WireWriter w(buf);
    if (rewrite_without_opt(w, m).truncated) ++truncated;
  }
  EXPECT_GT(with_opt, 0);   // the OPT record really is dropped somewhere
  EXPECT_GT(truncated, 0);  // and truncation really happens somewhere
}

TEST(RewriteWithoutOpt, OwnerPointingAtTheQuestionMatchesTheWriterForAnyName) {
  // An answer whose owner points at the question (C0 0C): written as the same pointer, except
  // for a root question, which the writer gives no compression target.
  for (const bool root : {false, true}) {
    SCOPED_TRACE(root ? "root" : "a.hg.test");
    std::vector<uint8_t> p = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0};
    const std::vector<uint8_t> name = {1, 'a', 2, 'h', 'g', 4, 't', 'e', 's', 't'};
    // The question's root label, type and class; then A 192.0.2.1, TTL 3600, owner C0 0C.
    const std::vector<uint8_t> rest = {0, 0, 1,    0,    1, 0xC0, 12,  0, 1, 0, 1,
                                       0, 0, 0x0E, 0x10, 0, 4,    192, 0, 2, 1};
    if (!root) p.insert(p.end(), name.begin(), name.end());
    p.insert(p.end(), rest.begin(), rest.end());
    Message m;
    ASSERT_TRUE(m.parse(p, ParseMode::Strict).has_value());
    expect_same(m, 65535);
    std::vector<uint8_t> buf(512);
    WireWriter w(buf);
    ASSERT_TRUE(rewrite_without_opt(w, m).ok);
    const std::size_t owner_at = p.size() - 16;
    EXPECT_EQ(w.written()[owner_at], root ? 0x00 : 0xC0);
  }
}

TEST(RewriteWithoutOpt, DropsTheOptRecordAndItsCount) {
  const auto packet = test::read_vector("nsid_cookie");
  Message m;
  ASSERT_TRUE(m.parse(packet, ParseMode::Lenient).has_value());
  ASSERT_TRUE(m.edns().has_value());
  std::vector<uint8_t> buf(65535);
  WireWriter w(buf);
  ASSERT_TRUE(rewrite_without_opt(w, m).ok);
  Message again;
  ASSERT_TRUE(again.parse(w.written(), ParseMode::Strict).has_value());
  EXPECT_FALSE(again.edns().has_value());
  EXPECT_EQ(again.records().size(), m.records().size());
  EXPECT_EQ(again.header().arcount, m.header().arcount - 1);
}

}  // namespace
}  // namespace hg::wire
