// Names and answers the micro-benchmarks share: header-only, test code.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "wire/owned.h"
#include "wire/rdata.h"

namespace hg::bench {

inline wire::Name name_of(const std::string& text) {
  return *wire::Name::from_text(text);
}

/// "host123.bench.example.com" (prefix, number, suffix). snprintf rather than
/// "lit" + std::to_string(i): GCC 12 -O3 warns falsely there (-Wrestrict, PR105329).
inline std::string host(std::size_t i, const char* prefix = "host",
                        const char* suffix = ".bench.example.com") {
  char buf[128];
  const int n = std::snprintf(buf, sizeof buf, "%s%zu%s", prefix, i, suffix);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

/// A typical CDN answer for an A query: qname CNAME edge.cdn.example.net, and two A records
/// there (about 100 bytes of sections).
inline std::vector<uint8_t> cdn_answer_for(const std::string& qname) {
  wire::OwnedMessage m;
  m.header.id = 1;
  m.header.set(wire::flag::QR, true);
  m.header.set(wire::flag::RD, true);
  m.header.set(wire::flag::RA, true);
  m.questions.push_back({name_of(qname), wire::RRType::A, 1});
  m.answer.push_back({name_of(qname), wire::RRType::CNAME, 1, 3600,
                      wire::RdataName{name_of("edge.cdn.example.net")}});
  m.answer.push_back(
      {name_of("edge.cdn.example.net"), wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 2, 1}}});
  m.answer.push_back(
      {name_of("edge.cdn.example.net"), wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 2, 2}}});
  return wire::to_wire(m);
}

}  // namespace hg::bench
