// hourglassd: flags → Config → Server::run(). Everything else lives in hg_resolver.
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <string>
#include <variant>

#include "resolver/config.h"
#include "resolver/server.h"
#include "wire/name.h"

namespace {

int run(int argc, char** argv) {
  using namespace hg::resolver;
  ParseOptions opts;
  opts.validate_zone = [](std::string_view zone) -> std::optional<std::string> {
    if (auto n = hg::wire::Name::from_text(zone); !n) {
      return std::string("not a domain name (") + std::string(hg::wire::to_string(n.error().code)) +
             ")";
    }
    return std::nullopt;
  };
  auto parsed = parse_config(argc, argv, opts);
  if (auto* exit = std::get_if<ConfigExit>(&parsed)) {
    std::fputs((exit->message + "\n").c_str(), exit->exit_code == 0 ? stdout : stderr);
    return exit->exit_code;
  }
  Config& config = std::get<Config>(parsed);
  if (config.check_config) {
    // Everything that can be checked without binding sockets has been (flags, file, upstream
    // list, forwarding loop, zone names); a running instance may hold the ports. The
    // warnings start-up would print (an unusable nameserver line, ...) are printed too.
    for (const auto& w : config.warnings)
      fmt::print(stderr, "warning: {}\n", w);
    fmt::print("hourglassd: configuration OK{}\n",
               config.warnings.empty()
                   ? std::string()
                   : fmt::format(" ({} warning{} above)", config.warnings.size(),
                                 config.warnings.size() == 1 ? "" : "s"));
    return 0;
  }
  auto server = Server::create(config);
  if (!server) {
    fmt::print(stderr, "hourglassd: {}\n", server.error());
    return 1;
  }
  return server.value()->run();
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever is thrown past run() (std::bad_alloc, a CLI11 or fmt error, a bug) is reported
  // with its message and a failure status, rather than ending in std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglassd: %s\n", e.what());
    return 1;
  }
}
