// The command line of hourglassd, made from the settings table (config_keys.h): the CLI11
// app that parses the flags and prints --help, and the JSON the man pages, the completion
// and docs/configuration.md are generated from (base/cli_doc.h, packaging/gen-docs).
// CLI11 only splits the command line into text values; the table's setters convert them,
// so its wording never reaches the user. Internal to the config files.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "resolver/config_keys.h"

namespace hg::resolver::settings {

struct Cli {
  CLI::App app{
      "hourglass: a caching DNS forwarder that serves stale answers when upstream "
      "fails",
      "hourglassd"};
  std::string config_path;
  bool check_config = false;
  std::map<std::string, std::string, std::less<>> scalars;
  std::map<std::string, std::vector<std::string>, std::less<>> lists;
  std::map<std::string, std::string, std::less<>> flags;  ///< "true", or what follows '='
  std::map<std::string, CLI::Option*, std::less<>> options;

  Cli();
  /// Whether --NAME was given on the command line.
  bool given(std::string_view name) const;
};

/// What --help prints for `app`.
std::string render_help(CLI::App& app);

}  // namespace hg::resolver::settings
