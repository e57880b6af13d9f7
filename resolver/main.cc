// hourglassd: flags → Config → Server::run(). Everything else lives in hg_resolver.
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/text.h"
#include "resolver/config.h"
#include "resolver/config_keys.h"
#include "resolver/log.h"
#include "resolver/ops/privileges.h"
#include "resolver/routing_settings.h"
#include "resolver/server.h"
#include "wire/name.h"

namespace {

// The man pages hourglassd(8) and hourglass.toml(5) beyond the flags (packaging/gen-docs
// renders them; the flags come from the table in resolver/config.cc).
constexpr const char* kManual = R"(# DESCRIPTION
hourglassd is a caching DNS forwarder meant to be the machine's own resolver. It answers on UDP and TCP from a cache whose records count their TTLs down, forwards misses to the upstream servers (one query per name however many clients ask), serves stale answers when the upstreams fail (RFC 8767), and answers SERVFAIL on time when nothing stale is cached.

Every flag is also a key of the --config file (see hourglass.toml(5)); a flag given on the command line overrides the file.

# SIGNALS
SIGHUP re-reads the --upstream-file and the hosts files, and from the --config file the keys {reload_keys} (those not given on the command line); it reopens a rotated dnstap file, and probes the upstreams' DNSSEC support again when they changed. Every other setting takes a restart. The cache and the links set with hourglass-ctl link are kept. SIGTERM and SIGINT stop gracefully: no new queries, the ones in flight are answered, and the cache is written to --cache-file.

# LOGGING
Messages go to standard error, one per line. Under systemd (standard error connected to the journal, as JOURNAL_STREAM says) each line starts with its syslog priority, <3> for errors to <6> for information, so that journalctl -p warning shows warnings and errors only; on a terminal the lines are plain. --log-queries=json writes the query log as JSON lines.

# PRIVILEGES
Started as root (by hand, in a container, by OpenRC or sysvinit), hourglassd binds its ports, opens its files and then switches to --user for good: no supplementary groups, no capabilities, no way back to root. Started as root without --user it refuses to run unless --allow-root is given. Under the packaged systemd unit it runs as a dynamic user and needs neither. Every file it opens by path must be a regular file (not a symbolic link), owned by root or its user and writable by no one else.

# FILES
  /etc/hourglass/hourglass.toml    the configuration (packaged default)
  /etc/hourglass/upstream.conf     the upstream servers, in resolv.conf format
  /run/hourglass/control           the control socket of hourglass-ctl(8)
  /var/lib/hourglass/cache         the cache saved at stop and loaded at start

# EXIT STATUS
0 after a graceful stop or --help, --version, a --check-config that found nothing wrong; 1 when it cannot start (a port in use, an unreadable file), or when --check-config finds a hosts file it cannot use (missing, unreadable, too large); 2 for a wrong flag, key or value, with one line saying which and what is allowed (for the --config file, one line per mistake, each naming its line).

# EXAMPLES
  hourglassd --listen 127.0.0.1:5353 --upstream 192.0.2.1
  hourglassd --config /etc/hourglass/hourglass.toml --check-config
  systemctl reload hourglassd

# SEE ALSO
hourglass.toml(5), hourglass-ctl(8), hourglass-rehearse(1), resolv.conf(5), systemd.service(5)
)";

constexpr const char* kTomlManual = R"(# DESCRIPTION
The file given to hourglassd(8) with --config is TOML: one key = value line per setting. The keys are the names of hourglassd's flags without the leading dashes, and take the same values. A value is a string or an integer; a repeatable key takes a string or an array of strings; a flag key takes true or false. A flag given on the command line overrides the file's key. Unknown keys, and values out of range, stop the start with one line each (all of them, up to 20) naming the file and line, the key, the value and what is allowed.

ttl-cap and shadow-ttl may also be written as a table: [ttl-cap] then "shop.example.com" = 60.

hourglassd --config FILE --check-config checks a file without starting.

# EXAMPLES
  listen = ["127.0.0.1:53", "[::1]:53"]
  upstream-file = "/etc/hourglass/upstream.conf"
  cache-size = "64MiB"
  stale-max = "1d"
  control = "/run/hourglass/control"
  cache-file = "/var/lib/hourglass/cache"
  ttl-cap = ["shop.example.com=60"]

# PRIVILEGES
Started as root (by hand, in a container, by OpenRC or sysvinit), hourglassd binds its ports, opens its files and then switches to --user for good: no supplementary groups, no capabilities, no way back to root. Started as root without --user it refuses to run unless --allow-root is given. Under the packaged systemd unit it runs as a dynamic user and needs neither. Every file it opens by path must be a regular file (not a symbolic link), owned by root or its user and writable by no one else.

# FILES
  /etc/hourglass/hourglass.toml    the file the packaged systemd unit passes to --config

# SEE ALSO
hourglassd(8), hourglass-ctl(8)
)";

int run(int argc, char** argv) {
  using namespace hg::resolver;
  if (hg::clidoc::requested()) {
    hg::clidoc::Extra extra;
    extra.section = 8;
    extra.synopsis = "[OPTIONS]";
    // The keys SIGHUP re-reads come from the settings table, so the page cannot drift.
    std::vector<std::string_view> reload_keys;
    for (const auto& k : hg::resolver::settings::keys())
      if (k.reload() == hg::resolver::settings::Reload::Key) reload_keys.push_back(k.name);
    extra.manual = fmt::format(fmt::runtime(kManual),
                               fmt::arg("reload_keys", hg::base::text::join_and(reload_keys)));
    extra.toml_manual = kTomlManual;
    std::fputs(config_doc_json(std::move(extra)).c_str(), stdout);
    return 0;
  }
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
    if (exit->exit_code == 0) {
      std::fputs((exit->message + "\n").c_str(), stdout);
    } else {
      hg::resolver::log::write(hg::resolver::log::Level::Error, exit->message);
    }
    return exit->exit_code;
  }
  Config& config = std::get<Config>(parsed);
  if (config.check_config) {
    // Everything that can be checked without binding sockets has been (flags, file, upstream
    // list, forwarding loop, zone names); a running instance may hold the ports. The
    // warnings start-up would print (an unusable nameserver line, ...) are printed too.
    // The hosts files are read as start-up would: a missing, unreadable or oversized one is
    // an error here (hourglassd would start without its names), a malformed line a warning.
    std::vector<std::string> errors;
    for (const std::string& path : config.hosts_files) {
      auto hosts = read_hosts_file(path);
      if (!hosts) {
        errors.push_back("--hosts-file: " + hosts.error());
        continue;
      }
      for (const auto& e : hosts->errors)
        config.warnings.push_back(fmt::format("hosts file {}:{}; line skipped", path, e));
    }
    for (const auto& w : config.warnings)
      log::print(log::Level::Warning, "warning: {}", w);
    if (!errors.empty()) {
      for (const auto& e : errors)
        log::print(log::Level::Error, "error: {}", e);
      fmt::print("hourglassd: configuration NOT OK: {} error{} above\n", errors.size(),
                 errors.size() == 1 ? "" : "s");
      return 1;
    }
    // The settings in force, as a file --config reads back to the same settings (unset paths
    // and options left out); the verdict is a comment of that file.
    fmt::print(
        "# the settings in force (hourglassd --check-config)\n"
        "{}",
        to_toml(config));
    fmt::print("# hourglassd: configuration OK{}\n",
               config.warnings.empty()
                   ? std::string()
                   : fmt::format(" ({} warning{} above)", config.warnings.size(),
                                 config.warnings.size() == 1 ? "" : "s"));
    return 0;
  }
  // Started as root, it runs as --user once bound, or as root only when told to
  // (resolver/ops/privileges.h).
  if (auto refused = refuse_root(config)) {
    log::write(log::Level::Error, *refused);
    return 2;
  }
  forbid_new_privileges();  // hourglassd runs no program; before any thread starts
  auto server = Server::create(config);
  if (!server) {
    hg::resolver::log::print(hg::resolver::log::Level::Error, "hourglassd: {}", server.error());
    return 1;
  }
  if (auto failed = drop_to_user(config)) {
    log::write(log::Level::Error, *failed);
    return 1;
  }
  if (!config.user.empty()) {
    log::print(log::Level::Info,
               "hourglassd: running as user {} (uid {}, gid {}, no supplementary groups, no "
               "capabilities)",
               config.user, config.user_uid, config.user_gid);
    for (const auto& w : check_user_access(config))
      log::print(log::Level::Warning, "warning: {}", w);
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
    hg::resolver::log::print(hg::resolver::log::Level::Error, "hourglassd: {}", e.what());
    return 1;
  }
}
