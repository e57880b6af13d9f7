// Running unprivileged when started as root (docs/security.md, "Without systemd").
//
// The order is fixed by what needs root: main() reads the configuration (files owned by root
// may be root-only), Server::create() binds every listener (port 53), the control socket and
// the metrics port, opens the dnstap output and loads the cache file; then drop_to_user()
// switches to --user for good, before the worker threads start. What happens later runs as
// that user: SIGHUP re-reads (so the hosts, upstream and TOML files must be readable by it),
// the cache save at stop (its directory must be writable by it), the dnstap reopen.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "resolver/config.h"

namespace hg::resolver {

/// Started as root without --user and without --allow-root: the one line that says so and how
/// to fix it. nullopt when the start may go on.
std::optional<std::string> refuse_root(const Config& config);

/// PR_SET_NO_NEW_PRIVS for this thread and every thread started after it (call before any
/// thread starts): nothing hourglassd runs can gain privileges through a set-uid file.
void forbid_new_privileges();

/// With --user: setgroups(0 groups), setgid, setuid to the user, then checks that no
/// capability is left (effective, permitted, inheritable, ambient) and that setuid(0) fails.
/// An error line when any step fails; the daemon must then stop.
std::optional<std::string> drop_to_user(const Config& config);

/// Warnings for what the user will need later: the cache file's directory writable, the
/// files SIGHUP re-reads readable. One line each, naming the path and the fix.
std::vector<std::string> check_user_access(const Config& config);

}  // namespace hg::resolver
