#include "wire/owned.h"

namespace hg::wire {

std::vector<OwnedRecord>& OwnedMessage::section(Section s) noexcept {
  switch (s) {
    case Section::Answer:
      return answer;
    case Section::Authority:
      return authority;
    case Section::Additional:
      break;
  }
  return additional;
}

const std::vector<OwnedRecord>& OwnedMessage::section(Section s) const noexcept {
  return const_cast<OwnedMessage*>(this)->section(s);
}

RCode OwnedMessage::rcode() const noexcept {
  unsigned high = edns ? edns->ext_rcode_high : 0;
  return static_cast<RCode>((high << 4) | header.rcode_low());
}

void OwnedMessage::set_rcode(RCode r) noexcept {
  const auto v = static_cast<unsigned>(r);
  header.set_rcode_low(static_cast<uint8_t>(v & 0xF));
  if (edns) edns->ext_rcode_high = static_cast<uint8_t>(v >> 4);
}

namespace {

bool names_identical(const Rdata& a, const Rdata& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<RdataName>(&a)) return x->name.identical(std::get<RdataName>(b).name);
  if (auto* x = std::get_if<RdataMX>(&a))
    return x->exchange.identical(std::get<RdataMX>(b).exchange);
  if (auto* x = std::get_if<RdataSRV>(&a)) return x->target.identical(std::get<RdataSRV>(b).target);
  if (auto* x = std::get_if<RdataSOA>(&a)) {
    const auto& y = std::get<RdataSOA>(b);
    return x->mname.identical(y.mname) && x->rname.identical(y.rname);
  }
  return true;
}

bool records_identical(const std::vector<OwnedRecord>& a, const std::vector<OwnedRecord>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i]) || !a[i].owner.identical(b[i].owner) ||
        !names_identical(a[i].rdata, b[i].rdata))
      return false;
  }
  return true;
}

// Writes one record; rolls back and returns false when it does not fit.
bool write_record(WireWriter& w, const OwnedRecord& rr) {
  const std::size_t mark = w.mark();
  if (w.name(rr.owner) && w.u16(static_cast<uint16_t>(rr.type)) && w.u16(rr.klass) &&
      w.u32(rr.ttl) && write_rdata_with_length(w, rr.type, rr.rdata))
    return true;
  w.rollback(mark);
  return false;
}

}  // namespace

bool identical(const OwnedMessage& a, const OwnedMessage& b) {
  if (!(a == b)) return false;
  for (std::size_t i = 0; i < a.questions.size(); ++i)
    if (!a.questions[i].name.identical(b.questions[i].name)) return false;
  return records_identical(a.answer, b.answer) && records_identical(a.authority, b.authority) &&
         records_identical(a.additional, b.additional);
}

Result<OwnedMessage> to_owned(const Message& m) {
  OwnedMessage o;
  o.header = m.header();
  o.questions.reserve(m.questions().size());
  for (const auto& q : m.questions())
    o.questions.push_back(OwnedQuestion{q.name, q.type, q.klass});
  for (const auto& rr : m.records()) {
    auto rd = read_rdata(m, rr);
    if (!rd) return rd.error();
    o.section(rr.section)
        .push_back(OwnedRecord{m.owner(rr), rr.type, rr.klass, rr.ttl, std::move(*rd)});
  }
  if (const auto& e = m.edns()) {
    OwnedEdns oe;
    oe.udp_size = e->udp_size;
    oe.ext_rcode_high = e->ext_rcode_high;
    oe.version = e->version;
    oe.flags = e->flags;
    e->for_each_option([&](const EdnsOption& opt) {
      oe.options.push_back(OwnedOption{opt.code, {opt.data.begin(), opt.data.end()}});
    });
    o.edns = std::move(oe);
  }
  return o;
}

WriteOutcome write_message(WireWriter& w, const OwnedMessage& m) {
  WriteOutcome out;
  const std::size_t base = w.mark();
  if (m.questions.size() > 0xFFFF) return out;
  Header h = m.header;
  h.qdcount = static_cast<uint16_t>(m.questions.size());
  h.ancount = h.nscount = h.arcount = 0;
  uint8_t zeros[kHeaderSize] = {};
  if (!w.bytes(zeros)) return out;
  for (const auto& q : m.questions) {
    if (!w.name(q.name) || !w.u16(static_cast<uint16_t>(q.type)) || !w.u16(q.klass)) {
      w.rollback(base);
      return out;
    }
  }

  // Keep room for the OPT record while writing records, so that truncation never drops it.
  std::vector<EdnsOption> opts;
  OptSpec spec;
  if (m.edns) {
    for (const auto& o : m.edns->options)
      opts.push_back(EdnsOption{o.code, o.data});
    spec = OptSpec{.udp_size = m.edns->udp_size,
                   .ext_rcode_high = m.edns->ext_rcode_high,
                   .version = m.edns->version,
                   .flags = m.edns->flags,
                   .options = opts,
                   .ede = std::nullopt};
  }
  const std::size_t opt_room = m.edns ? opt_size(spec) : 0;
  const std::size_t limit = w.limit();
  if (w.room() < opt_room) {
    w.rollback(base);
    return out;
  }
  w.set_limit(limit - opt_room);

  uint16_t* counts[3] = {&h.ancount, &h.nscount, &h.arcount};
  bool full = false;
  for (int s = 0; s < 3 && !full; ++s) {
    for (const auto& rr : m.section(static_cast<Section>(s))) {
      if (*counts[s] == 0xFFFF || !write_record(w, rr)) {
        full = true;
        // RFC 2181 §9: leaving out additional data alone does not make an answer truncated.
        if (s < 2) out.truncated = true;
        break;
      }
      ++*counts[s];
      ++out.records;
    }
  }
  w.set_limit(limit);
  if (m.edns) {
    if (h.arcount == 0xFFFF || !write_opt(w, spec)) {
      w.rollback(base);
      return WriteOutcome{};
    }
    ++h.arcount;
  }
  if (out.truncated) h.set(flag::TC, true);
  h.write_unchecked(w.written_mut().data() + base);
  out.ok = true;
  return out;
}

std::vector<uint8_t> to_wire(const OwnedMessage& m, std::size_t limit) {
  std::vector<uint8_t> buf(limit);
  WireWriter w(buf);
  auto r = write_message(w, m);
  if (!r.ok) return {};
  buf.resize(w.size());
  return buf;
}

}  // namespace hg::wire
