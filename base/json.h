// The one JSON string writer: every JSON document the project prints (hourglass-rehearse's
// reports, the command-line descriptions of base/cli_doc.h) quotes its text through here, so
// one set of rules holds everywhere.
//
// The rules (RFC 8259 §7), and what is decided beyond them:
// - '"' and '\' are escaped; \b \f \n \r \t use their short forms; every other byte below
//   0x20, and DEL (0x7f, legal in JSON but invisible on a terminal), is written \u00XX.
// - Valid UTF-8 is copied as it is, except U+2028 and U+2029 (legal JSON, but line breaks
//   to JavaScript and to some log viewers), written \u2028 and \u2029.
// - Invalid UTF-8 (a stray continuation byte, a truncated or overlong sequence, a UTF-16
//   surrogate, anything above U+10FFFF, 0xC0/0xC1/0xF5..0xFF) is never copied: each byte of
//   it becomes \ufffd (the replacement character). The output is thus always valid UTF-8
//   and valid JSON whatever the input, at the cost of losing those bytes; the text we quote
//   (DNS names in presentation form, file names, help text) is ASCII or UTF-8 in practice.
#pragma once

#include <string>
#include <string_view>

namespace hg::base::json {

/// `text` as a JSON string literal, quotes included.
std::string quote(std::string_view text);
/// The same, appended to `out`.
void append_quoted(std::string& out, std::string_view text);

}  // namespace hg::base::json
