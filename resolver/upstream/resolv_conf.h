// The resolv.conf reader lives in base/resolv_conf.h (hourglass-rehearse reads the system's
// resolv.conf without linking the daemon); the resolver's rooms keep these names for it.
#pragma once

#include "base/resolv_conf.h"
#include "resolver/checked.h"
#include "resolver/net/endpoint.h"

namespace hg::resolver {
using base::FileText;
using base::no_nameserver_reason;
using base::parse_resolv_conf;
using base::read_resolv_conf;
using base::ResolvConf;
using base::unquote_private_lines;

/// base::read_text_file() under the name the resolver's file readers use.
inline Checked<FileText> read_small_file(const std::string& path, std::size_t max_bytes,
                                         base::FileCheck check = base::FileCheck::Trusted) {
  return base::read_text_file(path, max_bytes, check);
}
}  // namespace hg::resolver
