// The config file: reading it (toml++) into the key table's setters, the SIGHUP re-reads of
// the keys that reload, and to_toml(), a Config written back as a TOML file. A TOML value
// arrives as text (an integer as its decimal text) and goes through the same setter as the
// flag, so the file and the command line give the same error lines.
#include <toml++/toml.h>

#include <algorithm>
#include <sstream>

#include "base/checked_open.h"
#include "resolver/config_keys.h"
#include "resolver/text.h"

namespace hg::resolver {
using text::quote;

namespace settings {
namespace {

// The text of a scalar TOML value, or nullopt for tables, arrays, floats, dates.
std::optional<std::string> toml_scalar_text(const toml::node& n) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  return std::nullopt;
}

std::string toml_display(const toml::node& n) {
  if (auto t = toml_scalar_text(n)) return *t;
  std::ostringstream os;
  if (auto b = n.as_boolean()) {
    os << (b->get() ? "true" : "false");
  } else if (auto f = n.as_floating_point()) {
    os << f->get();
  } else if (n.is_array()) {
    os << "[...]";
  } else {
    os << "{...}";
  }
  return os.str();
}

// The values a TOML key provides, as text, or an error line.
Checked<std::vector<std::string>> toml_values(const Key& key, const toml::node& n,
                                              const std::string& path) {
  std::vector<std::string> out;
  auto bad = [&](std::string_view what) {
    return Checked<std::vector<std::string>>::failure(name_value(path, key.name, toml_display(n)) +
                                                      ": " + std::string(what));
  };
  switch (key.kind) {
    case Kind::Flag:
      if (auto b = n.as_boolean()) {
        out.push_back(b->get() ? "true" : "false");
        return out;
      }
      if (auto str = n.as_string(); str && key.name == "log-queries") {
        out.push_back(str->get());
        return out;
      }
      return bad("expected true or false");
    case Kind::Scalar:
      if (auto t = toml_scalar_text(n)) {
        out.push_back(*t);
        return out;
      }
      return bad("expected a string or an integer");
    case Kind::List:
      // A list key takes an array, even of one value (the form --check-config prints): one
      // spelling per kind of key, and a file that says plainly that it replaces the list.
      if (auto t = toml_scalar_text(n)) {
        std::string fix = std::string(key.name) + " = [\"" + *t + "\"]";
        if (key.name == "ttl-cap" || key.name == "shadow-ttl")
          fix += " (or a [" + std::string(key.name) + "] table of \"ZONE\" = SECONDS)";
        return bad(std::string(key.name) + " is a list, even of one value: write " + fix);
      }
      if (auto arr = n.as_array()) {
        for (const toml::node& e : *arr) {
          auto t = toml_scalar_text(e);
          if (!t) return bad("expected an array of strings, e.g. [\"127.0.0.1:53\"]");
          out.push_back(*t);
        }
        return out;
      }
      // ttl-cap may also be a table: [ttl-cap] "shop.example.com" = 60
      if (auto tbl = n.as_table(); tbl && key.name == "forward") {
        // [forward] "corp.example" = ["10.8.0.1", "10.8.0.2:5353"] (or one string)
        for (auto&& [zone, servers] : *tbl) {
          std::string list;
          if (auto t = toml_scalar_text(servers)) {
            list = *t;
          } else if (auto sa = servers.as_array()) {
            for (const toml::node& e : *sa) {
              auto one = toml_scalar_text(e);
              if (!one) return bad("expected a table of ZONE = [\"ADDR[:PORT]\", ...]");
              list += (list.empty() ? "" : ",") + *one;
            }
          } else {
            return bad("expected a table of ZONE = [\"ADDR[:PORT]\", ...]");
          }
          out.push_back(std::string(zone.str()) + "=" + list);
        }
        return out;
      }
      if (auto tbl = n.as_table(); tbl && (key.name == "ttl-cap" || key.name == "shadow-ttl")) {
        for (auto&& [zone, secs] : *tbl) {
          auto t = toml_scalar_text(secs);
          if (!t) return bad("expected a table of ZONE = SECONDS, e.g. \"example.com\" = 60");
          out.push_back(std::string(zone.str()) + "=" + *t);
        }
        return out;
      }
      return bad("expected a string or an array of strings");
  }
  return out;
}

// The --config file: read under the shared rules (base/checked_open.h: no symbolic link, owned
// by root or the daemon's user, writable by no one else), then parsed. A file others may not
// read (it may hold the Redis password) has none of its text quoted in the error.
constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;

std::optional<std::string> read_toml(const std::string& path, toml::table& tbl,
                                     bool& private_text) {
  auto text = read_small_file(path, kMaxConfigFileBytes);
  if (!text) return "--config " + text.error();
  private_text = text.value().private_text;
  try {
    tbl = toml::parse(text.value().text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    std::string msg = "--config " + quote(path) + ": ";
    if (where.line > 0) {
      msg +=
          "line " + std::to_string(where.line) + ", column " + std::to_string(where.column) + ": ";
    }
    std::string desc(e.description());
    std::replace(desc.begin(), desc.end(), '\n', ' ');
    if (private_text)
      desc = "not TOML (the text is not quoted: the file is not readable by every user)";
    return msg + desc + "; expected a TOML file of key = value lines, e.g. cache-size = \"64MiB\"";
  }
  return std::nullopt;
}

/// At most this many mistakes of one file are listed (then how many more).
constexpr std::size_t kMaxConfigErrors = 20;

}  // namespace

std::optional<std::string> apply_toml(Config& c, const std::string& path,
                                      const ParseOptions& options, bool& file_upstream) {
  toml::table tbl;
  bool private_text = false;
  if (auto err = read_toml(path, tbl, private_text)) return err;
  // Every mistake of the file is reported, one line each, naming its line: an operator fixing
  // a file should not need one run per mistake. The Config is not used when there is one.
  std::string errors;
  std::size_t count = 0;
  auto report = [&](const toml::node& where, std::string text) {
    if (++count > kMaxConfigErrors) return;
    const auto line = where.source().begin.line;
    // "PATH: ..." becomes "PATH:LINE: ...".
    if (line > 0 && text.starts_with(path + ": "))
      text.insert(path.size(), ":" + std::to_string(line));
    errors += (errors.empty() ? "" : "\n") + text;
  };
  for (auto&& [k, node] : tbl) {
    std::string_view name = k.str();
    const Key* key = find_key(name);
    if (key == nullptr) {
      if (private_text) {
        report(node, path + ": an unknown key (not quoted: the file is not readable by every " +
                         "user); the keys are the flag names without the dashes, e.g. cache-size");
        continue;
      }
      std::string msg = path + ": unknown key " + quote(name) + "; the keys are the flag names " +
                        "without the dashes, e.g. cache-size";
      std::string dashed(name);
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      if (dashed != name && find_key(dashed) != nullptr) msg += " (did you mean " + dashed + "?)";
      report(node, std::move(msg));
      continue;
    }
    // A value of a file others may not read is not quoted; the key's name is ours.
    auto refused = [&](const std::string& why) -> std::string {
      if (!private_text) return why;
      return path + ": " + std::string(key->name) +
             ": a value was refused (not quoted: the file is not readable by every user); " +
             "compare it with what hourglassd --help says of --" + std::string(key->name);
    };
    auto values = toml_values(*key, node, path);
    if (!values) {
      report(node, refused(values.error()));
      continue;
    }
    if (key->clear) key->clear(c);
    for (const std::string& v : values.value()) {
      if (auto allowed = key->set(c, v, options)) {
        report(node, refused(name_value(path, key->name, v) + ": " + *allowed));
        break;
      }
    }
    if (key->name == "upstream") file_upstream = true;
  }
  if (count == 0) return std::nullopt;
  if (count > kMaxConfigErrors)
    errors += "\n" + path + ": and " + std::to_string(count - kMaxConfigErrors) + " more mistakes";
  return errors;
}

}  // namespace settings

std::string to_toml(const Config& c) {
  using namespace settings;
  std::string out;
  for (const Key& k : keys()) {
    if (k.name == "upstream" && c.upstreams_from_file) {
      // The file stays the source of truth for them: shown, not set.
      std::string list = "[";
      for (std::size_t i = 0; i < c.upstreams.size(); ++i)
        list += (i ? ", " : "") + toml_string(c.upstreams[i].to_string());
      out += "# upstream (from upstream-file) = " + list + "]\n";
      continue;
    }
    if (auto value = k.show(c, /*all=*/false)) out += std::string(k.name) + " = " + *value + "\n";
  }
  return out;
}

Checked<std::pair<std::string, std::string>> reread_dnstap_settings(const Config& running) {
  using R = Checked<std::pair<std::string, std::string>>;
  std::pair<std::string, std::string> out{running.dnstap, running.dnstap_identity};
  if (running.config_file.empty()) return out;
  // Only the two dnstap keys: a bad value elsewhere in the file (a shadow-ttl, say) is
  // reported by the reload of that setting, not as a dnstap problem.
  toml::table tbl;
  bool private_text = false;
  if (auto err = settings::read_toml(running.config_file, tbl, private_text))
    return R::failure(*err);
  Config fresh;
  for (const std::string_view name :
       {std::string_view("dnstap"), std::string_view("dnstap-identity")}) {
    const toml::node* n = tbl.get(name);
    if (n == nullptr) continue;
    const settings::Key* key = settings::find_key(name);
    auto values = settings::toml_values(*key, *n, running.config_file);
    if (!values) return R::failure(values.error());
    for (const std::string& v : values.value()) {
      if (auto allowed = key->set(fresh, v, ParseOptions{}))
        return R::failure(settings::name_value(running.config_file, key->name, v) + ": " +
                          *allowed);
    }
  }
  if (!running.dnstap_from_cli) out.first = fresh.dnstap;
  if (!running.dnstap_identity_from_cli) out.second = fresh.dnstap_identity;
  return out;
}

Checked<std::pair<std::vector<ForwardZone>, std::vector<std::string>>> reread_routing_settings(
    const Config& running) {
  using R = Checked<std::pair<std::vector<ForwardZone>, std::vector<std::string>>>;
  std::pair<std::vector<ForwardZone>, std::vector<std::string>> out{running.forward_zones,
                                                                    running.hosts_files};
  if (running.config_file.empty()) return out;
  Config fresh;
  bool file_upstream = false;
  if (auto err = settings::apply_toml(fresh, running.config_file, ParseOptions{}, file_upstream))
    return R::failure(*err);
  if (!running.forward_from_cli) out.first = fresh.forward_zones;
  if (!running.hosts_files_from_cli) out.second = fresh.hosts_files;
  return out;
}

Checked<std::vector<TtlCap>> read_shadow_ttls(const std::string& config_file,
                                              const ParseOptions& options) {
  using R = Checked<std::vector<TtlCap>>;
  toml::table tbl;
  bool private_text = false;
  if (auto err = settings::read_toml(config_file, tbl, private_text)) return R::failure(*err);
  Config c;
  const toml::node* n = tbl.get("shadow-ttl");
  if (n == nullptr) return c.shadow_ttls;
  const settings::Key* key = settings::find_key("shadow-ttl");
  auto values = settings::toml_values(*key, *n, config_file);
  if (!values) return R::failure(values.error());
  for (const std::string& v : values.value()) {
    if (auto allowed = key->set(c, v, options))
      return R::failure(settings::name_value(config_file, key->name, v) + ": " + *allowed);
  }
  return c.shadow_ttls;
}

}  // namespace hg::resolver
