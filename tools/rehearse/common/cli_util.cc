#include "tools/rehearse/common/cli_util.h"

#include <cstdio>
#include <fstream>

#include "base/cli_doc.h"
#include "base/resolv_conf.h"

namespace hg::rehearse {

namespace {

// CLI11's --help (exit 0) or a one-line parse error (exit 2).
int cli_exit(CLI::App& app, const CLI::ParseError& e, std::string_view cmd) {
  if (e.get_exit_code() == 0) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "hourglass-rehearse %.*s: %s (--help lists the flags)\n",
               static_cast<int>(cmd.size()), cmd.data(), e.what());
  return 2;
}

}  // namespace

int usage_error(std::string_view cmd, std::string_view flag, std::string_view value,
                std::string_view allowed) {
  std::fprintf(stderr, "hourglass-rehearse %.*s: %.*s '%.*s': expected %.*s\n",
               static_cast<int>(cmd.size()), cmd.data(), static_cast<int>(flag.size()), flag.data(),
               static_cast<int>(value.size()), value.data(), static_cast<int>(allowed.size()),
               allowed.data());
  return 2;
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv, std::string_view cmd) {
  if (hg::clidoc::requested()) return print_cli_doc(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e, cmd);
  }
  return std::nullopt;
}

int print_cli_doc(const CLI::App& app) {
  std::fputs(clidoc::to_json(app, clidoc::Extra{}).c_str(), stdout);
  return 0;
}

std::optional<std::vector<base::Endpoint>> resolvers_or_system(
    std::string_view cmd, const std::vector<std::string>& flags) {
  std::vector<base::Endpoint> out;
  for (const auto& r : flags) {
    auto ep = base::parse_endpoint(r, 53);
    if (!ep) {
      usage_error(cmd, "--resolver", r,
                  "a numeric address with an optional port, e.g. 127.0.0.1:53");
      return std::nullopt;
    }
    out.push_back(*ep);
  }
  if (!out.empty()) return out;
  auto rc = base::read_resolv_conf("/etc/resolv.conf", base::FileCheck::Any);
  if (!rc || rc->nameservers.empty()) {
    std::fprintf(stderr,
                 "hourglass-rehearse %.*s: --resolver not given and /etc/resolv.conf names no "
                 "usable nameserver; give --resolver ADDR[:PORT]\n",
                 static_cast<int>(cmd.size()), cmd.data());
    return std::nullopt;
  }
  return rc->nameservers;
}
bool write_file(const std::string& path, const std::string& text) {
  if (path == "-") return std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return static_cast<bool>(f);
}

}  // namespace hg::rehearse
