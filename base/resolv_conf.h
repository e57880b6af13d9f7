// The resolv.conf reader behind `upstream-file`: only the `nameserver` lines matter to a
// forwarder. Read at start-up and again on SIGHUP.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/checked.h"
#include "base/endpoint.h"
#include "base/small_file.h"

namespace hg::base {

/// The parsed `nameserver` lines of a resolv.conf-style file.
struct ResolvConf {
  std::vector<Endpoint> nameservers;  ///< in file order, port 53 unless one was given
  std::vector<std::string> warnings;  ///< "line 3: ..." for nameserver lines we could not use
};

/// Reads `nameserver ADDR` lines (IPv4, IPv6, IPv6 with %scope). Lines starting with '#' or
/// ';' are comments, as is anything after the address; other keywords (search, options,
/// domain, sortlist) are ignored, since a forwarder has no use for them. As an extension
/// for tests and unusual setups, "ADDR:PORT" and "[V6]:PORT" are accepted too.
ResolvConf parse_resolv_conf(std::string_view text);
/// Reads and parses a file; the error names the path and the reason. A file with a NUL byte
/// is refused. The daemon's files are
/// read under base::FileCheck::Trusted (base/checked_open.h); a tool reading the system's
/// /etc/resolv.conf passes Any.
Checked<ResolvConf> read_resolv_conf(const std::string& path,
                                     base::FileCheck check = base::FileCheck::Trusted);

/// The whole of a small configuration file (resolv.conf, hosts files), read without
/// blocking and only if it is a regular file of at most max_bytes: a FIFO or a device planted
/// at the path, or a huge file, must not stall or bloat the loop that (re)reads it. Errors
/// name the path.
struct FileText {
  std::string text;
  bool private_text = false;  ///< not readable by every user: never quote its lines
};
Checked<FileText> read_text_file(const std::string& path, std::size_t max_bytes,
                                 base::FileCheck check = base::FileCheck::Trusted);
/// For a file with private_text: each "WHERE: what is wrong, quoting the line" message keeps
/// WHERE (the line number) and loses the rest, so a root-only file's content never reaches
/// a log that others may read.
void unquote_private_lines(std::vector<std::string>& messages);
/// Why a file that read_resolv_conf() returned for `path` gave no nameserver, to follow
/// "PATH: ": "has no nameserver line", or, when it had only unusable ones, "has no usable
/// nameserver line: line 2: nameserver \"dns.example\" is not ...; line 3: ..." (at most
/// three, then how many more).
std::string no_nameserver_reason(const ResolvConf& rc, const std::string& path);

}  // namespace hg::base
