// EDNS(0): writing OPT records with options and Extended DNS Errors, and reading them back.
#include "wire/edns.h"

#include <gtest/gtest.h>

#include "tests/wire/packet_builder.h"
#include "wire/header.h"
#include "wire/message.h"

namespace hg::wire {
namespace {

using test::Bytes;

TEST(WriteOpt, WritesABareOptRecord) {
  Bytes buf(64);
  WireWriter w(buf);
  // (Member-wise, not designated: g++ 12's -Wmissing-field-initializers flags partial
  // designated initializers.)
  OptSpec spec;
  spec.flags = kEdnsDoBit;
  ASSERT_TRUE(write_opt(w, spec));
  EXPECT_EQ(opt_size(OptSpec{}), 11u);
  EXPECT_EQ(Bytes(w.written().begin(), w.written().end()),
            (Bytes{0, 0, 41, 0x04, 0xD0, 0, 0, 0x80, 0, 0, 0}));
}

TEST(WriteOpt, AppendsOptionsThenEde) {
  const Bytes cookie = {1, 2, 3, 4, 5, 6, 7, 8};
  const EdnsOption opts[] = {{edns_option::Cookie, cookie}};
  OptSpec spec;
  spec.ext_rcode_high = 1;
  spec.flags = kEdnsDoBit;
  spec.options = opts;
  spec.ede = ExtendedError{ede::StaleAnswer, "upstream down"};
  EXPECT_EQ(opt_size(spec), 11u + 12 + 4 + 2 + 13);

  // A whole response: header, then append_opt() bumps ARCOUNT.
  Bytes buf(512);
  WireWriter w(buf);
  Header h;
  h.id = 7;
  h.flags = 0x8180;
  uint8_t hb[kHeaderSize];
  h.write_unchecked(hb);
  ASSERT_TRUE(w.bytes(hb));
  ASSERT_TRUE(append_opt(w, spec));
  EXPECT_EQ(w.size(), kHeaderSize + opt_size(spec));

  Message m;
  ASSERT_TRUE(m.parse(w.written(), ParseMode::Strict).has_value());
  ASSERT_TRUE(m.edns().has_value());
  EXPECT_EQ(m.header().arcount, 1);
  EXPECT_EQ(m.rcode(), RCode::BadVers);
  EXPECT_TRUE(m.edns()->dnssec_ok());
  std::vector<uint16_t> codes;
  std::optional<ExtendedError> ede_seen;
  m.edns()->for_each_option([&](const EdnsOption& o) {
    codes.push_back(o.code);
    if (o.code == edns_option::ExtendedError) ede_seen = parse_extended_error(o.data).value();
  });
  EXPECT_EQ(codes, (std::vector<uint16_t>{edns_option::Cookie, edns_option::ExtendedError}));
  ASSERT_TRUE(ede_seen.has_value());
  EXPECT_EQ(ede_seen->info_code, ede::StaleAnswer);
  EXPECT_EQ(ede_seen->extra_text, "upstream down");
}

TEST(WriteOpt, WritesNothingWhenItDoesNotFit) {
  Bytes buf(64);
  WireWriter w(buf, 10);
  EXPECT_FALSE(write_opt(w, OptSpec{}));
  EXPECT_EQ(w.size(), 0u);
  EXPECT_FALSE(append_opt(w, OptSpec{}));  // no header yet
}

TEST(ParseExtendedError, ReadsCodeAndText) {
  const Bytes d = {0, 22, 'n', 'o', 0};
  auto e = parse_extended_error(d);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->info_code, 22);
  EXPECT_EQ(e->extra_text, "no");  // a trailing NUL is tolerated and dropped
  EXPECT_EQ(parse_extended_error(Bytes{0}).error().code, ParseError::BadOpt);
  EXPECT_EQ(ede_purpose(22), "No Reachable Authority");
  EXPECT_EQ(ede_purpose(3), "Stale Answer");
  EXPECT_EQ(ede_purpose(27), "Unsupported NSEC3 Iterations Value");
  EXPECT_EQ(ede_purpose(999), "");
}

TEST(ValidateEdnsOptions, ChecksEachOptionLength) {
  EXPECT_TRUE(validate_edns_options(Bytes{}, 0).has_value());
  EXPECT_TRUE(validate_edns_options(Bytes{0, 3, 0, 0}, 0).has_value());
  EXPECT_EQ(validate_edns_options(Bytes{0, 3, 0, 0, 0, 10, 0, 2, 1}, 100).error(),
            (Error{ParseError::BadOpt, 104}));
}

}  // namespace
}  // namespace hg::wire
