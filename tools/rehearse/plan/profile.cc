#include "tools/rehearse/plan/profile.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "tools/rehearse/default_profile.h"  // generated: kDefaultProfileToml

namespace hg::rehearse {

namespace {

using base::Checked;

constexpr const char* kKinds = "fixed, floor, cap, stale or until";

// A profile's own strings (layer names, kinds, keys) end up in the error line: a multi-line
// TOML string must not break it into several lines, nor a control byte reach the terminal.
std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

Checked<Layer> read_layer(const toml::table& t, const std::string& where) {
  Layer l;
  auto fail = [&](const std::string& what) { return Checked<Layer>::failure(where + ": " + what); };
  for (auto&& [k, node] : t) {
    const std::string_view key = k.str();
    if (key != "name" && key != "kind" && key != "seconds" && key != "source" && key != "note" &&
        key != "until" && key != "negative_seconds") {
      return fail("unknown key \"" + std::string(key) +
                  "\"; allowed: name, kind, seconds, negative_seconds, until, source, note");
    }
    if (key == "seconds" || key == "negative_seconds") {
      // as_integer(), not value<int64_t>(): toml++ converts a float such as 970E40 to int64
      // without a range check (undefined behaviour; found by fuzzing).
      const auto* i = node.as_integer();
      const std::optional<int64_t> v =
          i != nullptr ? std::optional<int64_t>(i->get()) : std::nullopt;
      if (!v || *v < 0 || *v > kMaxLayerSeconds) {
        return fail(std::string(key) + ": expected a whole number of seconds from 0 to " +
                    std::to_string(kMaxLayerSeconds));
      }
      (key == "seconds" ? l.seconds : l.negative_seconds) = static_cast<uint32_t>(*v);
      continue;
    }
    if (!node.is_string()) return fail(std::string(key) + ": expected a string");
    std::string s = *node.value<std::string>();
    if (key == "name") {
      l.name = std::move(s);
    } else if (key == "source") {
      l.source = std::move(s);
    } else if (key == "note") {
      l.note = std::move(s);
    } else if (key == "until") {
      l.until = std::move(s);
    } else if (key == "kind") {
      auto kind = layer_kind_from_text(s);
      if (!kind) return fail("kind: \"" + s + "\" is not a kind; expected " + kKinds);
      l.kind = *kind;
    }
  }
  if (l.name.empty()) return fail("name: missing; every layer needs a name");
  if (!t.contains("kind")) return fail("kind: missing; expected " + std::string(kKinds));
  const bool needs_seconds =
      l.kind == LayerKind::Fixed || l.kind == LayerKind::Floor || l.kind == LayerKind::Cap;
  if (needs_seconds && !l.seconds) {
    return fail("seconds: missing; a " + std::string(to_string(l.kind)) +
                " layer needs its hold in seconds");
  }
  if (l.kind == LayerKind::Until && l.until.empty()) l.until = "an event";
  if (l.kind != LayerKind::Until && !l.until.empty()) {
    return fail("until: only an `until` layer has one");
  }
  return l;
}

}  // namespace

std::string_view to_string(LayerKind k) noexcept {
  switch (k) {
    case LayerKind::Fixed:
      return "fixed";
    case LayerKind::Floor:
      return "floor";
    case LayerKind::Cap:
      return "cap";
    case LayerKind::Stale:
      return "stale";
    case LayerKind::Until:
      return "until";
  }
  return "?";
}

std::optional<LayerKind> layer_kind_from_text(std::string_view s) noexcept {
  for (LayerKind k :
       {LayerKind::Fixed, LayerKind::Floor, LayerKind::Cap, LayerKind::Stale, LayerKind::Until}) {
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

namespace {

Checked<Profile> parse_profile_text(std::string_view text, std::string_view origin) {
  using R = Checked<Profile>;
  const std::string org(origin);
  toml::table tbl;
  try {
    tbl = toml::parse(text, org);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    std::string msg = org + ": ";
    if (at.line > 0) {
      msg += "line " + std::to_string(at.line) + ", column " + std::to_string(at.column) + ": ";
    }
    return R::failure(msg + std::string(e.description()) + "; expected TOML with [[layer]] tables");
  }
  Profile p;
  p.origin = org;
  for (auto&& [k, node] : tbl) {
    if (k.str() != "layer") {
      return R::failure(org + ": unknown key \"" + std::string(k.str()) +
                        "\"; a profile holds only [[layer]] tables");
    }
    const toml::array* arr = node.as_array();
    if (arr == nullptr) return R::failure(org + ": layer: expected [[layer]] tables");
    std::size_t i = 0;
    for (const toml::node& e : *arr) {
      ++i;
      const toml::table* t = e.as_table();
      std::string where = org + ": layer " + std::to_string(i);
      if (t == nullptr) return R::failure(where + ": expected a table");
      if (auto n = t->get_as<std::string>("name")) where += " (\"" + n->get() + "\")";
      auto layer = read_layer(*t, where);
      if (!layer) return R::failure(layer.error());
      p.layers.push_back(std::move(layer.value()));
    }
  }
  if (p.layers.size() > 256) return R::failure(org + ": more than 256 layers");
  return p;
}

}  // namespace

Checked<Profile> parse_profile(std::string_view text, std::string_view origin) {
  auto p = parse_profile_text(text, origin);
  if (!p) return Checked<Profile>::failure(one_line(p.error()));
  return p;
}

Checked<Profile> read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Checked<Profile>::failure("--profile " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.size() > (1u << 20)) {
    return Checked<Profile>::failure("--profile " + path + ": larger than 1 MiB");
  }
  return parse_profile(text, path);
}

std::string_view default_profile_text() noexcept {
  return kDefaultProfileToml;
}

Profile default_profile() {
  auto p = parse_profile(kDefaultProfileToml, "built-in default profile");
  // The shipped file is tested (plan_profile_test); a failure here is a build defect.
  if (!p) return Profile{"built-in default profile (unreadable: " + p.error() + ")", {}};
  return std::move(p.value());
}

}  // namespace hg::rehearse
