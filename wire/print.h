// Presentation printer: a DNS message as dig (BIND 9.18) prints it — the header line, flags and
// counts, the OPT pseudosection (EDNS version, flags, payload size, NSID, cookie, EDE, other
// options), then each section with records in master-file form, tab-aligned to dig's columns
// (TTL at 24, class at 32, type at 40, RDATA at 48):
//
//   ;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 4660
//   ;; flags: qr rd ra; QUERY: 1, ANSWER: 1, AUTHORITY: 0, ADDITIONAL: 1
//
//   ;; OPT PSEUDOSECTION:
//   ; EDNS: version: 0, flags: do; udp: 1232
//   ;; QUESTION SECTION:
//   ;www.example.com.		IN	A
//
//   ;; ANSWER SECTION:
//   www.example.com.	3600	IN	A	192.0.2.1
//
// Used by hourglass-decode, tests (golden files) and logs; not on the packet path.
#pragma once

#include <string>

#include "wire/message.h"
#include "wire/owned.h"

namespace hg::wire {

/// The whole message, each line ending in '\n', with a blank line after each section.
std::string print_message(const OwnedMessage& m);

/// The same for a parsed view. Counts in the flags line are the header's own. A record whose
/// RDATA cannot be decoded (impossible after a successful parse) is printed as opaque data.
std::string print_message(const Message& m);

/// One record in master-file form without a trailing newline:
/// "www.example.com.\t3600\tIN\tA\t192.0.2.1".
std::string record_to_text(const OwnedRecord& rr);

/// One EDNS option as dig prints it in the pseudosection, without the leading "; ":
/// "EDE: 3 (Stale Answer): (upstream down)", "NSID: 6e 73 31 (\"ns1\")", "OPT=65001: 01 02".
std::string edns_option_to_text(uint16_t code, std::span<const uint8_t> data);

}  // namespace hg::wire
