// hourglass-ctl use-as-system-resolver [--undo] [--force] [--resolv-conf PATH] [--backup PATH]
//
// Makes hourglassd the machine's resolver: renames /etc/resolv.conf (a file or a symbolic
// link, as it is) to /etc/hourglass/resolv.conf.before and writes a new /etc/resolv.conf
// saying "nameserver 127.0.0.1", marked as written by this command. --undo renames the old
// one back, unless /etc/resolv.conf no longer carries the mark (something else has written it
// since: it is left alone and the command says where the old one is). The package's prerm
// runs --undo, so removing hourglass gives the machine its resolver back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hg::ctl {

/// The first line of the resolv.conf this command writes; --undo checks for it.
inline constexpr std::string_view kResolvConfMark =
    "# Written by hourglass-ctl use-as-system-resolver";

/// words[0] is "use-as-system-resolver". Returns the exit status (0 done, 1 refused or
/// failed, 2 a usage error), having printed what it did or why not.
int use_as_system_resolver(const std::string& socket, double timeout_s,
                           const std::vector<std::string>& words);

}  // namespace hg::ctl
