// The command line, --help and the documentation JSON, from the settings table (config_cli.h).
#include "resolver/config_cli.h"

#include "base/json.h"
#include "resolver/config.h"

#ifndef HG_VERSION
#define HG_VERSION "unknown"
#endif

namespace hg::resolver {
namespace settings {

std::string help_line(const Key& k) {
  std::string out(k.help);
  if (k.kind == Kind::List) out += "; repeatable";
  switch (k.reload()) {
    case Reload::Key:
      out += "; re-read from --config on SIGHUP";
      break;
    case Reload::File:
      out += "; the file is re-read on SIGHUP";
      break;
    case Reload::Restart:
      break;
  }
  // A flag is off unless given; an empty list needs no saying.
  if (k.kind == Kind::Flag) return out;
  if (k.default_text.empty()) return k.kind == Kind::Scalar ? out + " (default: none)" : out;
  if (k.described()) return out + " (default: " + std::string(k.default_text) + ")";
  return out + " (default " + std::string(k.default_text) + ")";
}

Cli::Cli() {
  app.set_version_flag("--version", std::string("hourglass ") + HG_VERSION);
  app.add_option("--config", config_path,
                 "TOML file with the same keys as these flags (without the dashes); flags "
                 "given here override it")
      ->type_name("PATH");
  for (const Key& k : keys()) {
    std::string flag = "--" + std::string(k.name);
    std::string help = help_line(k);
    CLI::Option* o = nullptr;
    switch (k.kind) {
      case Kind::Scalar:
        o = app.add_option(flag, scalars[std::string(k.name)], help)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        break;
      case Kind::List:
        o = app.add_option(flag, lists[std::string(k.name)], help)->allow_extra_args(false);
        break;
      case Kind::Flag:
        o = app.add_flag(flag, flags[std::string(k.name)], help);
        break;
    }
    o->type_name(std::string(k.type_name));
    o->group(std::string(group_info(k.group).title));
    options[std::string(k.name)] = o;
  }
  app.add_flag("--check-config", check_config,
               "Check the configuration (flags, file, upstreams, forwarding loop), print it "
               "and exit");
}

bool Cli::given(std::string_view name) const {
  auto it = options.find(name);
  return it != options.end() && it->second->count() > 0;
}

std::string render_help(CLI::App& app) {
  return app.help();
}

}  // namespace settings

std::string config_help() {
  settings::Cli cli;
  return settings::render_help(cli.app);
}

std::string config_doc_json(clidoc::Extra extra) {
  using namespace settings;
  const auto json_string = [](std::string_view s) { return base::json::quote(s); };
  Cli cli;
  for (const Key& k : keys())
    extra.toml_keys.emplace_back(k.name);
  std::string json = clidoc::to_json(cli.app, extra);
  // What the table knows beyond CLI11's: gen-docs lists the settings by group in
  // docs/configuration.md, and offers file names after the options that take a path.
  std::string more = "  \"groups\": [";
  for (std::size_t i = 0; i < groups().size(); ++i) {
    const GroupInfo& g = groups()[i];
    more += std::string(i ? "," : "") + "\n    {\"title\": " + json_string(g.title) +
            ", \"about\": " + json_string(g.about) + ", \"page\": " + json_string(g.page) + "}";
  }
  more += "\n  ],\n  \"settings\": [\n    {\"name\": \"config\", \"path\": true}";
  for (const Key& k : keys()) {
    const Reload r = k.reload();
    more += ",\n    {\"name\": " + json_string(k.name) +
            ", \"group\": " + json_string(group_info(k.group).title) +
            ", \"summary\": " + json_string(k.help) +
            ", \"default_text\": " + json_string(k.default_text) +
            ", \"default_is_value\": " + (k.described() ? "false" : "true") + ", \"reload\": " +
            (r == Reload::Key    ? "\"key\""
             : r == Reload::File ? "\"file\""
                                 : "\"restart\"") +
            ", \"path\": " + (k.path() ? "true" : "false") + "}";
  }
  more += "\n  ]\n";
  // to_json's object ends in "\n}\n": the two lists go in before it.
  const std::size_t end = json.rfind("\n}");
  return json.substr(0, end) + ",\n" + more + "}\n";
}

}  // namespace hg::resolver
