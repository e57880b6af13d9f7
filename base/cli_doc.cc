// cli_doc: see cli_doc.h.
#include "base/cli_doc.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/json.h"

namespace hg::clidoc {

namespace json = base::json;

bool requested() {
  const char* v = std::getenv("HG_CLI_DOC");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

namespace {

std::string string_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    out += json::quote(items[i]);
  }
  return out + "]";
}

}  // namespace

std::string to_json(const CLI::App& app, const Extra& extra) {
  std::string out = "{\n";
  out += "  \"program\": " + json::quote(app.get_name()) + ",\n";
  out += "  \"section\": " + std::to_string(extra.section) + ",\n";
  out += "  \"synopsis\": " + json::quote(extra.synopsis) + ",\n";
  out += "  \"description\": " + json::quote(app.get_description()) + ",\n";
  out += "  \"footer\": " + json::quote(app.get_footer()) + ",\n";
  out += "  \"options\": [";
  bool first = true;
  std::vector<std::string> positionals;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (!o->nonpositional()) {
      positionals.push_back(o->get_name());
      continue;
    }
    std::vector<std::string> names;
    for (const auto& s : o->get_snames())
      names.push_back("-" + s);
    for (const auto& l : o->get_lnames())
      names.push_back("--" + l);
    const bool is_flag = o->get_expected_max() == 0;  // CLI11: a flag expects no value
    // A flag's type name says what may follow '=' (hourglassd's "--log-queries[=json]").
    const std::string type =
        is_flag && !o->get_type_name().starts_with("[") ? std::string() : o->get_type_name();
    std::string key;
    if (!o->get_lnames().empty()) key = o->get_lnames().front();
    const bool toml =
        std::find(extra.toml_keys.begin(), extra.toml_keys.end(), key) != extra.toml_keys.end();
    out += first ? "\n" : ",\n";
    first = false;
    out += "    {\"names\": " + string_list(names) + ", \"type\": " + json::quote(type) +
           ", \"help\": " + json::quote(o->get_description()) +
           ", \"default\": " + json::quote(o->get_default_str()) +
           ", \"flag\": " + (is_flag ? "true" : "false") +
           ", \"toml\": " + (toml ? "true" : "false") +
           ", \"repeatable\": " + (o->get_expected_max() > 1 ? "true" : "false") + "}";
  }
  out += "\n  ],\n";
  out += "  \"positionals\": " + string_list(positionals) + ",\n";
  out += "  \"commands\": [";
  for (std::size_t i = 0; i < extra.commands.size(); ++i) {
    const Command& c = extra.commands[i];
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"name\": " + json::quote(c.name) + ", \"args\": " + json::quote(c.args) +
           ", \"summary\": " + json::quote(c.summary) + "}";
  }
  out += "\n  ],\n";
  out += "  \"manual\": " + json::quote(extra.manual) + ",\n";
  out += "  \"toml_manual\": " + json::quote(extra.toml_manual) + "\n";
  out += "}\n";
  return out;
}

}  // namespace hg::clidoc
