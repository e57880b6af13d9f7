#include "wire/print.h"

#include <cstdio>

#include "wire/rdata.h"

namespace hg::wire {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// BIND's master-file indentation (masterdump.c indent()), which dig uses: move from column
// `current` to column `to` (at least one character further) with tabs to the last tab stop
// not past `to`, then spaces. `current` then counts as `to`, as in BIND — so a field that
// overruns its column is followed by a single space instead of a tab.
void indent(std::string& s, std::size_t& current, std::size_t to) {
  if (to < current + 1) to = current + 1;
  std::size_t from = current;
  if (to / 8 > from / 8) {
    s.append(to / 8 - from / 8, '\t');
    from = to / 8 * 8;
  }
  s.append(to - from, ' ');
  current = to;
}

// Appends `text` and advances the column counter by its length.
void field(std::string& s, std::size_t& current, std::string_view text) {
  s += text;
  current += text.size();
}

void hex_spaced(std::string& s, std::span<const uint8_t> data) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i != 0) s.push_back(' ');
    s.push_back(kHex[data[i] >> 4]);
    s.push_back(kHex[data[i] & 0xF]);
  }
}

void hex_and_text(std::string& s, std::span<const uint8_t> data) {
  hex_spaced(s, data);
  s += " (\"";
  for (uint8_t c : data)
    s.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '.');
  s += "\")";
}

void append_flags(std::string& s, uint16_t flags) {
  static constexpr std::pair<uint16_t, const char*> kFlags[] = {
      {flag::QR, "qr"}, {flag::AA, "aa"}, {flag::TC, "tc"}, {flag::RD, "rd"},
      {flag::RA, "ra"}, {flag::AD, "ad"}, {flag::CD, "cd"},
  };
  for (const auto& [bit, name] : kFlags) {
    if ((flags & bit) != 0) {
      s.push_back(' ');
      s += name;
    }
  }
}

void append_header(std::string& s, const Header& h, RCode rcode, std::size_t qd, std::size_t an,
                   std::size_t ns, std::size_t ar) {
  s += ";; ->>HEADER<<- opcode: " + to_string(h.opcode()) + ", status: " + to_string(rcode) +
       ", id: " + std::to_string(h.id) + "\n";
  s += ";; flags:";
  append_flags(s, h.flags);
  s += ";";
  if (h.has(flag::Z)) s += " MBZ: 0x4;";
  s += " QUERY: " + std::to_string(qd) + ", ANSWER: " + std::to_string(an) +
       ", AUTHORITY: " + std::to_string(ns) + ", ADDITIONAL: " + std::to_string(ar) + "\n\n";
}

void append_edns(std::string& s, const OwnedEdns& e) {
  s += ";; OPT PSEUDOSECTION:\n";
  s += "; EDNS: version: " + std::to_string(e.version) + ", flags:";
  if (e.dnssec_ok()) s += " do";
  s += ";";
  if (const uint16_t z = e.flags & static_cast<uint16_t>(~kEdnsDoBit); z != 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, " MBZ: 0x%04x,", z);
    s += buf;
  }
  s += " udp: " + std::to_string(e.udp_size) + "\n";
  for (const auto& o : e.options)
    s += "; " + edns_option_to_text(o.code, o.data) + "\n";
}

void append_question(std::string& s, const OwnedQuestion& q) {
  // dig does not count the leading ';' as a column (BIND prints it outside the indentation).
  std::size_t col = 0;
  s += ";";
  field(s, col, q.name.to_text());
  indent(s, col, 32);
  field(s, col, to_string(static_cast<RRClass>(q.klass)));
  indent(s, col, 40);
  field(s, col, to_string(q.type));
  s += "\n";
}

void append_sections(std::string& s, const OwnedMessage& m) {
  if (!m.questions.empty()) {
    s += ";; QUESTION SECTION:\n";
    for (const auto& q : m.questions)
      append_question(s, q);
    s += "\n";
  }
  for (int i = 0; i < 3; ++i) {
    const auto sec = static_cast<Section>(i);
    const auto& rrs = m.section(sec);
    if (rrs.empty()) continue;
    s += ";; ";
    s += to_string(sec);
    s += " SECTION:\n";
    for (const auto& rr : rrs)
      s += record_to_text(rr) + "\n";
    s += "\n";
  }
}

}  // namespace

std::string edns_option_to_text(uint16_t code, std::span<const uint8_t> data) {
  std::string s;
  switch (code) {
    case edns_option::NSID:
      s = "NSID:";
      if (!data.empty()) {
        s.push_back(' ');
        hex_and_text(s, data);
      }
      return s;
    case edns_option::Cookie:
      s = "COOKIE: ";
      for (uint8_t b : data) {
        s.push_back(kHex[b >> 4]);
        s.push_back(kHex[b & 0xF]);
      }
      return s;
    case edns_option::ExtendedError: {
      auto e = parse_extended_error(data);
      if (!e) break;
      s = "EDE: " + std::to_string(e->info_code);
      if (auto purpose = ede_purpose(e->info_code); !purpose.empty()) {
        s += " (";
        s += purpose;
        s += ")";
      }
      if (!e->extra_text.empty()) {
        s += ": (";
        for (char c : e->extra_text) {
          auto u = static_cast<uint8_t>(c);
          // EXTRA-TEXT is UTF-8 (RFC 8914 §2); keep printable ASCII and UTF-8 bytes, mask
          // control characters so a hostile text cannot forge lines of output.
          s.push_back(u < 0x20 || u == 0x7f ? '.' : c);
        }
        s += ")";
      }
      return s;
    }
    default:
      break;
  }
  s = "OPT=" + std::to_string(code) + ":";
  if (!data.empty()) {
    s.push_back(' ');
    hex_and_text(s, data);
  }
  return s;
}

std::string record_to_text(const OwnedRecord& rr) {
  std::string s;
  std::size_t col = 0;
  field(s, col, rr.owner.to_text());
  indent(s, col, 24);
  field(s, col, std::to_string(rr.ttl));
  indent(s, col, 32);
  field(s, col, to_string(static_cast<RRClass>(rr.klass)));
  indent(s, col, 40);
  field(s, col, to_string(rr.type));
  indent(s, col, 48);
  s += rdata_to_text(rr.rdata);
  return s;
}

std::string print_message(const OwnedMessage& m) {
  std::string s;
  s.reserve(512);
  const std::size_t ar = m.additional.size() + (m.edns ? 1 : 0);
  append_header(s, m.header, m.rcode(), m.questions.size(), m.answer.size(), m.authority.size(),
                ar);
  if (m.edns) append_edns(s, *m.edns);
  append_sections(s, m);
  return s;
}

std::string print_message(const Message& msg) {
  OwnedMessage m;
  if (auto o = to_owned(msg)) {
    m = std::move(*o);
  } else {
    // Unreachable after a successful parse; fall back to opaque RDATA rather than fail.
    m.header = msg.header();
    for (const auto& q : msg.questions())
      m.questions.push_back(OwnedQuestion{q.name, q.type, q.klass});
    for (const auto& rr : msg.records()) {
      auto bytes = msg.packet().subspan(rr.rdata_offset, rr.rdlength);
      m.section(rr.section)
          .push_back(OwnedRecord{msg.owner(rr), rr.type, rr.klass, rr.ttl,
                                 RdataOpaque{{bytes.begin(), bytes.end()}}});
    }
  }
  const Header& h = msg.header();
  std::string s;
  s.reserve(512);
  append_header(s, h, msg.rcode(), h.qdcount, h.ancount, h.nscount, h.arcount);
  if (m.edns) append_edns(s, *m.edns);
  append_sections(s, m);
  return s;
}

}  // namespace hg::wire
