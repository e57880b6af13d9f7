#include "base/resolv_conf.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "base/small_file.h"
#include "base/text.h"

namespace hg::base {

using text::quote;
using text::trim;

// --- resolv.conf -----------------------------------------------------------------------------

ResolvConf parse_resolv_conf(std::string_view text) {
  ResolvConf rc;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    line = trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    auto sp = line.find_first_of(" \t");
    if (line.substr(0, sp) != "nameserver") continue;
    std::string_view rest =
        sp == std::string_view::npos ? std::string_view{} : trim(line.substr(sp));
    std::string_view addr = rest.substr(0, rest.find_first_of(" \t#;"));
    auto e = parse_endpoint(addr, 53);
    if (!e || e->port() == 0) {
      rc.warnings.push_back("line " + std::to_string(line_no) + ": nameserver " + quote(addr) +
                            " is not a numeric IPv4 or IPv6 address; ignored");
      continue;
    }
    rc.nameservers.push_back(*e);
  }
  return rc;
}

Checked<FileText> read_text_file(const std::string& path, std::size_t max_bytes,
                                 base::FileCheck check) {
  using R = Checked<FileText>;
  using S = base::SmallFile::Status;
  base::SmallFile f = base::read_small_file(path, max_bytes, check);
  switch (f.status) {
    case S::Ok:
      return FileText{std::move(f.text), f.private_text};
    case S::Refused:
      return R::failure(quote(path) + " " + f.refused);
    case S::CannotOpen:
      return R::failure("cannot open " + quote(path) + " (" + std::strerror(f.error) + ")");
    case S::NotRegular:
      return R::failure(quote(path) + " is not a regular file; not read");
    case S::TooLarge:
      return R::failure(quote(path) + " is larger than " + std::to_string(max_bytes) +
                        " bytes; not read");
    case S::CannotRead:
      break;
  }
  return R::failure("cannot read " + quote(path) + " (" + std::strerror(f.error) + ")");
}

void unquote_private_lines(std::vector<std::string>& messages) {
  for (std::string& m : messages) {
    const auto colon = m.find(": ");
    m = (colon == std::string::npos ? std::string() : m.substr(0, colon + 2)) +
        "not understood (the line is not quoted: the file is not readable by every user)";
  }
}

Checked<ResolvConf> read_resolv_conf(const std::string& path, base::FileCheck check) {
  // resolv.conf is a few lines; 1 MiB is far more than any real one.
  auto text = read_text_file(path, std::size_t{1} << 20, check);
  if (!text) return Checked<ResolvConf>::failure(text.error());
  // A NUL byte: not a text file (a binary written over it, a truncated write padded with
  // zeros, or a file made to hide a line from `cat`). Refused whole rather than half read:
  // the upstreams in force stay.
  const std::string& t = text.value().text;
  if (const auto nul = t.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    return Checked<ResolvConf>::failure(
        path + ": line " + std::to_string(line) +
        " contains a NUL byte: not a resolv.conf text file; write it as text (nameserver lines)");
  }
  ResolvConf rc = parse_resolv_conf(t);
  if (text.value().private_text) unquote_private_lines(rc.warnings);
  for (auto& w : rc.warnings)
    w.insert(0, path + ": ");
  return rc;
}

std::string no_nameserver_reason(const ResolvConf& rc, const std::string& path) {
  if (rc.warnings.empty()) return "has no nameserver line";
  constexpr std::size_t kShown = 3;
  std::string out = "has no usable nameserver line: ";
  const std::string prefix = path + ": ";
  for (std::size_t i = 0; i < rc.warnings.size() && i < kShown; ++i) {
    std::string_view w = rc.warnings[i];
    if (w.starts_with(prefix)) w.remove_prefix(prefix.size());
    if (w.ends_with("; ignored")) w.remove_suffix(9);
    if (i != 0) out += "; ";
    out += w;
  }
  if (rc.warnings.size() > kShown)
    out += "; and " + std::to_string(rc.warnings.size() - kShown) + " more";
  return out;
}

}  // namespace hg::base
