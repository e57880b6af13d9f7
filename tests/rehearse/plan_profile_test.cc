// The profile parser: the shipped default, good files, and one-line errors for bad ones.
#include <gtest/gtest.h>

#include "tools/rehearse/plan/profile.h"

namespace hg::rehearse {
namespace {

TEST(PlanProfile, DefaultProfileParsesAndNamesItsSources) {
  auto p = parse_profile(default_profile_text(), "default");
  ASSERT_TRUE(p) << p.error();
  EXPECT_GE(p->layers.size(), 12u);
  for (const Layer& l : p->layers) {
    EXPECT_FALSE(l.source.empty()) << l.name;
    if (l.kind == LayerKind::Fixed || l.kind == LayerKind::Floor || l.kind == LayerKind::Cap) {
      EXPECT_TRUE(l.seconds.has_value()) << l.name;
    }
  }
  EXPECT_EQ(default_profile().layers.size(), p->layers.size());
}

TEST(PlanProfile, ParsesEveryKind) {
  auto p = parse_profile(R"(
[[layer]]
name = "app"
kind = "fixed"
seconds = 45
source = "our config"
[[layer]]
name = "proxy"
kind = "until"
until = "reload"
seconds = 86400
[[layer]]
name = "stale forever"
kind = "stale"
note = "if enabled"
)",
                         "t.toml");
  ASSERT_TRUE(p) << p.error();
  ASSERT_EQ(p->layers.size(), 3u);
  EXPECT_EQ(p->layers[0].kind, LayerKind::Fixed);
  EXPECT_EQ(p->layers[0].seconds, 45u);
  EXPECT_EQ(p->layers[1].until, "reload");
  EXPECT_EQ(p->layers[1].seconds, 86400u);
  EXPECT_FALSE(p->layers[2].seconds.has_value());
  EXPECT_EQ(p->layers[2].note, "if enabled");
}

TEST(PlanProfile, EmptyProfileHasNoLayers) {
  auto p = parse_profile("", "empty.toml");
  ASSERT_TRUE(p) << p.error();
  EXPECT_TRUE(p->layers.empty());
}

struct Bad {
  const char* text;
  const char* expect;  // a part of the one-line error
};

class PlanProfileBad : public testing::TestWithParam<Bad> {};

TEST_P(PlanProfileBad, OneLineErrorNamingThePlace) {
  auto p = parse_profile(GetParam().text, "p.toml");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().find('\n'), std::string::npos) << p.error();
  EXPECT_EQ(p.error().rfind("p.toml: ", 0), 0u) << p.error();
  EXPECT_NE(p.error().find(GetParam().expect), std::string::npos) << p.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanProfileBad,
    testing::Values(
        Bad{"[[layer]\nname = \"x\"", "line 1"}, Bad{"name = \"x\"\n", "unknown key \"name\""},
        Bad{"layer = 3\n", "expected [[layer]] tables"},
        Bad{"[[layer]]\nkind = \"fixed\"\nseconds = 3\n", "name: missing"},
        Bad{"[[layer]]\nname = \"a\"\nseconds = 3\n", "kind: missing"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"forever\"\n", "\"forever\" is not a kind"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\n", "seconds: missing"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = -1\n", "seconds: expected"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = \"30\"\n", "seconds: expected"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = 1.5\n", "seconds: expected"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"cap\"\nseconds = 9999999999\n", "seconds: expected"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = 3\nhold = 4\n",
            "layer 1 (\"a\"): unknown key \"hold\""},
        Bad{"[[layer]]\nname = 7\nkind = \"fixed\"\n", "name: expected a string"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = 3\nuntil = \"x\"\n",
            "until: only"},
        // Found by fuzzing (tests/fuzz/corpus/profile/found-multiline-layer-name): a layer
        // named with a multi-line string broke the error into several lines.
        Bad{"[[layer]]\nname = \"\"\"a\nb\"\"\"\nkind = \"x\"\n",
            "layer 1 (\"a\\nb\"): kind: \"x\""},
        Bad{"[[layer]]\nname = \"a\\u001b[31m\"\nkind = \"x\"\n", "(\"a\\x1b[31m\")"},
        Bad{"\"a\\nb\" = 1\n", "unknown key \"a\\nb\""},
        // Found by fuzzing (tests/fuzz/corpus/profile/found-float-seconds): a float out of
        // int64's range was converted by toml++ without a check (UBSan).
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = 970E40\n", "seconds: expected"},
        Bad{"[[layer]]\nname = \"a\"\nkind = \"fixed\"\nseconds = 30.0\n", "seconds: expected"}),
    [](const testing::TestParamInfo<Bad>& p) { return "case" + std::to_string(p.index); });

TEST(PlanProfile, MissingFileIsAnError) {
  auto p = read_profile("/nonexistent/profile.toml");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("--profile /nonexistent/profile.toml"), std::string::npos);
}

}  // namespace
}  // namespace hg::rehearse
