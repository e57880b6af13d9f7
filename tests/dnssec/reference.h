// What a validating reference resolver (Unbound, kresd) says to one question: its rcode, AD
// bit and Extended DNS Errors, and the verdict they mean — AD secure, SERVFAIL bogus, anything
// else insecure — for the dnssec/ tests to hold the validator's verdict against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dnssec/rrset_check.h"
#include "tests/support/knot_server.h"
#include "wire/edns.h"
#include "wire/message.h"

namespace hg::test {

struct ReferenceAnswer {
  bool answered = false;
  int rcode = -1;
  bool ad = false;
  std::vector<uint16_t> ede;  ///< the info-codes of its EDE options, in order

  dnssec::Security security() const {
    if (!answered || rcode == 2) return dnssec::Security::Bogus;
    return ad ? dnssec::Security::Secure : dnssec::Security::Insecure;
  }
  bool has_ede(uint16_t code) const {
    for (const uint16_t c : ede)
      if (c == code) return true;
    return false;
  }
  /// "SERVFAIL EDE 7", "NOERROR AD", "NXDOMAIN EDE 27", "no answer".
  std::string text() const {
    if (!answered) return "no answer";
    static const char* const names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN"};
    std::string s = rcode >= 0 && rcode < 4 ? names[rcode] : "rcode " + std::to_string(rcode);
    if (ad) s += " AD";
    for (const uint16_t c : ede)
      s += " EDE " + std::to_string(c);
    return s;
  }
};

/// `qname` `qtype` asked of the resolver on 127.0.0.1:`port` with RD and DO (no CD).
inline ReferenceAnswer ask_reference(uint16_t port, const std::string& qname, uint16_t qtype) {
  ReferenceAnswer out;
  const auto r = dns_query(port, qname, qtype, 0x0100);
  wire::Message m;
  if (!r || !m.parse(*r)) return out;
  out.answered = true;
  out.rcode = static_cast<int>(m.rcode());
  out.ad = ((*r)[3] & 0x20) != 0;
  if (m.edns())
    m.edns()->for_each_option([&](const wire::EdnsOption& o) {
      if (o.code != 15) return;
      if (const auto e = wire::parse_extended_error(o.data)) out.ede.push_back(e->info_code);
    });
  return out;
}

inline std::string security_text(dnssec::Security s) {
  return s == dnssec::Security::Secure     ? "secure"
         : s == dnssec::Security::Insecure ? "insecure"
                                           : "bogus";
}

}  // namespace hg::test
