#include "wire/reencode.h"

#include "wire/rdata.h"

namespace hg::wire {

namespace {

// Types whose RDATA holds a name (read_rdata decodes it; the writer may compress it).
bool rdata_has_name(RRType type) noexcept {
  switch (type) {
    case RRType::NS:
    case RRType::CNAME:
    case RRType::PTR:
    case RRType::DNAME:
    case RRType::MX:
    case RRType::SRV:
    case RRType::SOA:
      return true;
    default:
      return false;
  }
}

// One record; rolls back and returns false when it does not fit or its RDATA does not decode.
bool rewrite_record(WireWriter& w, const Message& m, const RecordView& rr, bool& bad_rdata) {
  const std::size_t mark = w.mark();
  bool ok = w.name(m.owner(rr)) && w.u16(static_cast<uint16_t>(rr.type)) && w.u16(rr.klass) &&
            w.u32(rr.ttl);
  if (ok) {
    if (rdata_has_name(rr.type)) {
      auto rd = read_rdata(m, rr);
      if (!rd) {
        bad_rdata = true;
        ok = false;
      } else {
        ok = write_rdata_with_length(w, rr.type, *rd);
      }
    } else {
      // A, AAAA, TXT, CAA and opaque types: parse() validated exactly what read_rdata() checks,
      // and write_rdata() writes those bytes back unchanged.
      ok = w.u16(rr.rdlength) && w.bytes(m.packet().subspan(rr.rdata_offset, rr.rdlength));
    }
  }
  if (!ok) w.rollback(mark);
  return ok;
}

}  // namespace

WriteOutcome rewrite_without_opt(WireWriter& w, const Message& m) {
  WriteOutcome out;
  const std::size_t base = w.mark();
  const auto questions = m.questions();
  if (questions.size() > 0xFFFF) return out;
  Header h = m.header();
  h.qdcount = static_cast<uint16_t>(questions.size());
  h.ancount = h.nscount = h.arcount = 0;
  const uint8_t zeros[kHeaderSize] = {};
  if (!w.bytes(zeros)) return out;
  for (const Question& q : questions) {
    if (!w.name(q.name) || !w.u16(static_cast<uint16_t>(q.type)) || !w.u16(q.klass)) {
      w.rollback(base);
      return out;
    }
  }
  uint16_t* counts[3] = {&h.ancount, &h.nscount, &h.arcount};
  bool full = false;
  for (int s = 0; s < 3 && !full; ++s) {
    for (const RecordView& rr : m.section(static_cast<Section>(s))) {
      bool bad_rdata = false;
      if (*counts[s] == 0xFFFF || !rewrite_record(w, m, rr, bad_rdata)) {
        if (bad_rdata) {
          w.rollback(base);
          return WriteOutcome{};
        }
        full = true;
        // RFC 2181 §9: leaving out additional data alone does not make an answer truncated.
        if (s < 2) out.truncated = true;
        break;
      }
      ++*counts[s];
      ++out.records;
    }
  }
  if (out.truncated) h.set(flag::TC, true);
  h.write_unchecked(w.written_mut().data() + base);
  out.ok = true;
  return out;
}

}  // namespace hg::wire
