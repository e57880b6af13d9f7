// cli_doc: a program's command line as JSON, for the man pages and bash completion that the
// build generates (packaging/gen-docs, docs/packaging.md). The description is taken from the
// very CLI::App object that parses the arguments and prints --help, so a flag added to the
// program appears in its man page and completion at the next build, and one removed
// disappears: they cannot drift apart.
//
// A program asks requested() before parsing; when the environment has HG_CLI_DOC=1 it
// prints to_json(app, extra) to stdout and exits 0 instead of running. Nothing else reads
// the variable, and it changes no behaviour of a normal run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace hg::clidoc {

/// A word the program takes as its first argument (hourglass-ctl's commands,
/// hourglass-rehearse's subcommands): name, its arguments, one line of what it does.
struct Command {
  std::string name;
  std::string args;
  std::string summary;
};

/// What a man page needs beyond the flags.
struct Extra {
  int section = 1;                     ///< 1 for user commands, 8 for administration
  std::string synopsis;                ///< e.g. "[OPTIONS] COMMAND [ARGS...]"
  std::vector<Command> commands;       ///< subcommands, in order
  std::vector<std::string> toml_keys;  ///< flags (without dashes) that are also config-file keys
  /// Sections after OPTIONS: "# TITLE" lines start one, blank lines end a paragraph, lines
  /// indented by two spaces are shown as written (examples). Plain text, no roff.
  std::string manual;
  /// The same for the config file's own page (hourglass.toml(5)); empty for other programs.
  std::string toml_manual;
};

/// True when HG_CLI_DOC=1 is set.
bool requested();

/// The JSON description: program name, description, footer, every option (names, value
/// type, help text, default, whether it is a flag, whether it is a config-file key), the
/// positionals, and `extra`.
std::string to_json(const CLI::App& app, const Extra& extra);

}  // namespace hg::clidoc
