// resolver/query/top_names.h: the space-saving sketch behind `hourglass-ctl top`.
#include "resolver/query/top_names.h"

#include <gtest/gtest.h>

#include <string>

namespace hg::resolver {
namespace {

wire::Name name(const std::string& text) {
  return wire::Name::from_text(text).value().lowercased();
}

TEST(SpaceSaving, CountsExactlyWhileThereAreFreeCounters) {
  SpaceSaving s;
  for (int i = 0; i < 5; ++i)
    s.add(name("a.test"), name("a.test").hash());
  for (int i = 0; i < 3; ++i)
    s.add(name("b.test"), name("b.test").hash());
  const auto top = s.top(10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].name.to_text(), "a.test.");
  EXPECT_EQ(top[0].count, 5u);
  EXPECT_EQ(top[0].error, 0u);
  EXPECT_EQ(top[1].count, 3u);
  EXPECT_EQ(s.total(), 8u);
}

TEST(SpaceSaving, AHeavyNameSurvivesAFloodOfOneOffNamesInBoundedMemory) {
  SpaceSaving s;
  const auto hot = name("hot.test");
  // 10,000 distinct names seen once each, with the hot name every 10th query: the hot name
  // has 1/10 of the total, far above total/64, so it must be listed first.
  for (int i = 0; i < 10000; ++i) {
    const auto n = name("n" + std::to_string(i) + ".flood.test");
    s.add(n, n.hash());
    if (i % 10 == 0) s.add(hot, hot.hash());
  }
  const auto top = s.top(SpaceSaving::kCounters + 10);
  EXPECT_EQ(top.size(), SpaceSaving::kCounters);  // never more counters than that
  EXPECT_EQ(top[0].name.to_text(), "hot.test.");
  // count - error <= true count (1000) <= count
  EXPECT_GE(top[0].count, 1000u);
  EXPECT_LE(top[0].count - top[0].error, 1000u);
}

TEST(TopNames, TextListsBothKindsAndSaysHowTheyAreCounted) {
  TopNames t;
  for (int i = 0; i < 3; ++i)
    t.on_query(name("www.example.com"));
  t.on_upstream(name("cold.example.com"));
  const std::string text = t.text(10);
  EXPECT_NE(
      text.find("busiest www.example.com. " + std::to_string(3 * TopNames::kSampleEvery) + "\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("upstream cold.example.com. 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("; estimates:"), std::string::npos) << text;
}

TEST(TopNames, HostileNamesAreListedInPresentationForm) {
  TopNames t;
  const uint8_t wire[] = {4, 'a', ' ', '\n', 0xff, 4, 't', 'e', 's', 't', 0};
  const auto n = wire::Name::from_wire(wire).value();
  t.on_upstream(n);
  const std::string text = t.text(1);
  EXPECT_NE(text.find("upstream a\\032\\010\\255.test. 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace hg::resolver
