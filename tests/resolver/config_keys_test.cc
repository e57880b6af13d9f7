// The settings table (resolver/config_keys.h) is the one definition of each setting: its
// default as --help states it, as --check-config's TOML writes it and as Config holds it must
// be the same value, and the TOML written reads back to the same settings.
#include "resolver/config_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/resolver/parse_args.h"
#include "tests/support/temp_dir.h"

namespace hg::resolver {
namespace {

using settings::Key;
using settings::Kind;
using ::testing::HasSubstr;

// The values of a list default: "127.0.0.0/8, ::1/128".
std::vector<std::string> default_values(const Key& k) {
  std::vector<std::string> out;
  std::string_view rest = k.default_text;
  while (!rest.empty()) {
    const auto comma = rest.find(", ");
    out.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  return out;
}

// --help's entries: flag -> its description (CLI11 puts a long flag's on the next line).
std::map<std::string, std::string> help_entries(const std::string& help) {
  std::map<std::string, std::string> out;
  const std::regex option(R"(^\s+(--[a-z0-9-]+)\b(.*)$)");
  std::string current;
  std::size_t start = 0;
  while (start < help.size()) {
    std::size_t end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    const std::string line = help.substr(start, end - start);
    std::smatch m;
    if (std::regex_match(line, m, option)) {
      current = m[1];
      out[current] = m[2];
    } else if (!current.empty() && line.starts_with(std::string(20, ' '))) {
      out[current] += " " + line;
    }
    start = end + 1;
  }
  return out;
}

TEST(SettingsTable, EachDefaultIsTheValueOfADefaultConfig) {
  const Config fresh;
  int checked = 0;
  for (const Key& k : settings::keys()) {
    SCOPED_TRACE(std::string(k.name));
    if (k.default_text.empty() || k.described()) {
      // "none" or words: the setting has no value until given.
      const auto shown = k.show(fresh, true);
      EXPECT_TRUE(!shown || *shown == "[]") << "a default Config has " << *shown;
      continue;
    }
    Config c;
    if (k.clear) k.clear(c);
    for (const std::string& v : default_values(k))
      EXPECT_EQ(k.set(c, v, ParseOptions{}), std::nullopt) << "the setter refuses " << v;
    EXPECT_EQ(k.show(c, true), k.show(fresh, true))
        << "the table says " << k.default_text << ", Config's initializer differs";
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST(SettingsTable, HelpStatesEachTableDefault) {
  const auto entries = help_entries(config_help());
  const std::regex stated(R"(\(default:? ([^)]*)\)\s*$)");
  for (const Key& k : settings::keys()) {
    SCOPED_TRACE(std::string(k.name));
    const auto it = entries.find("--" + std::string(k.name));
    ASSERT_NE(it, entries.end()) << "--help does not list it";
    std::smatch m;
    const bool has = std::regex_search(it->second, m, stated);
    if (k.kind == Kind::Flag || (k.kind == Kind::List && k.default_text.empty())) {
      EXPECT_FALSE(has) << it->second;
      continue;
    }
    ASSERT_TRUE(has) << it->second;
    EXPECT_EQ(m[1].str(), k.default_text.empty() ? "none" : std::string(k.default_text));
    EXPECT_THAT(it->second, HasSubstr(std::string(k.help.substr(0, 30))));
  }
}

TEST(SettingsTable, ToTomlWritesTheTableDefaultsAndReadsThemBack) {
  const Config d = std::get<Config>(parse_args({"--upstream", "192.0.2.1"}));
  const std::string text = to_toml(d);
  // Each key's line, if written, holds the table's default (as the setter stores it).
  std::set<std::string> written;
  for (const Key& k : settings::keys()) {
    SCOPED_TRACE(std::string(k.name));
    const std::string head = std::string(k.name) + " = ";
    const auto at = text.find("\n" + head) != std::string::npos ? text.find("\n" + head) + 1
                    : text.starts_with(head)                    ? 0
                                                                : std::string::npos;
    if (at == std::string::npos) continue;
    written.insert(std::string(k.name));
    const std::string value = text.substr(at + head.size(), text.find('\n', at) - at - head.size());
    if (k.name == "upstream") continue;  // given here, no default
    if (k.default_text.empty() || k.described()) {
      EXPECT_TRUE(value == "[]" || value == "false") << value;
      continue;
    }
    Config c;
    if (k.clear) k.clear(c);
    for (const std::string& v : default_values(k))
      ASSERT_EQ(k.set(c, v, ParseOptions{}), std::nullopt);
    EXPECT_EQ(value, k.show(c, true).value_or("(nothing)"));
  }
  EXPECT_GE(written.size(), 20u) << text;
  // And the file reads back to the same settings, each of them.
  test::TempDir dir;
  const auto back = parse_args({"--config", dir.write("defaults.toml", text)});
  ASSERT_TRUE(std::holds_alternative<Config>(back)) << std::get<ConfigExit>(back).message;
  const Config& b = std::get<Config>(back);
  for (const Key& k : settings::keys())
    EXPECT_EQ(k.show(b, true), k.show(d, true)) << k.name;
  EXPECT_EQ(to_toml(b), text);
}

TEST(SettingsTable, EveryKeyIsDocumentedOnce) {
  std::set<std::string> names;
  for (const Key& k : settings::keys()) {
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << k.name << " twice";
    EXPECT_FALSE(k.help.empty()) << k.name;
    EXPECT_NE(k.help.back(), '.') << k.name << ": help lines end without a full stop";
    EXPECT_EQ(std::string(k.help).find("(default"), std::string::npos)
        << k.name << ": the default belongs in the table's default column";
    EXPECT_EQ(std::string(k.help).find("repeatable"), std::string::npos)
        << k.name << ": a list key's help gets \"repeatable\" from its kind";
    EXPECT_EQ(settings::find_key(k.name), &k);
  }
  // The documentation JSON carries every key with its group and default.
  const std::string json = config_doc_json({});
  for (const Key& k : settings::keys())
    EXPECT_THAT(json, HasSubstr("\"names\": [\"--" + std::string(k.name) + "\"]")) << k.name;
  for (const auto& g : settings::groups())
    EXPECT_THAT(json, HasSubstr("{\"title\": \"" + std::string(g.title) + "\""));
}

}  // namespace
}  // namespace hg::resolver
