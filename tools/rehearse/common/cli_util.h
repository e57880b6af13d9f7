// Small helpers the subcommands share: whole numbers (durations go through base/duration.h),
// one-line usage errors (exit 2), the resolver list (flags or /etc/resolv.conf), writing an
// output file. (Opening the trace files is trace/trace.h's open_traces.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/decimal.h"
#include "base/endpoint.h"

namespace hg::rehearse {

/// A whole decimal number, nothing before or after it; nullopt otherwise (and on overflow).
inline std::optional<uint64_t> parse_u64(std::string_view text) {
  return base::parse_decimal<uint64_t>(text);
}
/// Prints "hourglass-rehearse CMD: FLAG 'VALUE': expected ALLOWED" and returns 2.
int usage_error(std::string_view cmd, std::string_view flag, std::string_view value,
                std::string_view allowed);
/// Parses a subcommand's command line. nullopt: go on; else the exit status to return:
/// HG_CLI_DOC=1 (the JSON, 0), --help (the help, 0), or a parse error, printed as
/// "hourglass-rehearse CMD: WHAT (--help lists the flags)" (2).
std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv, std::string_view cmd);
/// Prints the subcommand's command line as JSON (base/cli_doc.h, for the man page and
/// completion) and returns 0; run when HG_CLI_DOC=1.
int print_cli_doc(const CLI::App& app);
/// The --resolver values, or the nameservers of /etc/resolv.conf; nullopt (after printing
/// the one-line error) when one is bad or there is none.
std::optional<std::vector<base::Endpoint>> resolvers_or_system(
    std::string_view cmd, const std::vector<std::string>& flags);
/// Writes `text` to the file `path`, or to stdout when it is "-"; false on any error (errno
/// says which).
bool write_file(const std::string& path, const std::string& text);

}  // namespace hg::rehearse
