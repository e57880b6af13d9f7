#include "wire/message.h"

namespace hg::wire {

namespace {

constexpr std::size_t kMaxMessage = 65535;  // a 16-bit TCP length or UDP datagram
constexpr std::size_t kMinQuestion = 5;     // root name + type + class
constexpr std::size_t kMinRecord = 11;      // root name + type + class + ttl + rdlength

// Reads one name that must end exactly at r's limit or before it.
Status name_within(WireReader& r) {
  return skip_name(r);
}

// Checks that RDATA of a known type has exactly the length its content needs. Names in the
// RDATA of RFC 1035 types may be compressed (RFC 3597 §4); we accept pointers in every type we
// know, as receivers should be liberal. `rd` is limited to the RDATA.
Status validate_rdata(RRType type, WireReader rd, std::size_t rdata_start) {
  const std::size_t len = rd.remaining();
  auto need_exact = [&](std::size_t n) -> Status {
    if (len != n) return Error{ParseError::RdataLength, rdata_start};
    return {};
  };
  auto fixed_then_name = [&](std::size_t fixed_before, std::size_t fixed_after,
                             int names) -> Status {
    if (auto s = rd.skip(fixed_before); !s) return Error{ParseError::RdataLength, rdata_start};
    for (int i = 0; i < names; ++i) {
      if (auto s = name_within(rd); !s) {
        // A name that runs off the end of the RDATA is a length disagreement.
        if (s.error().code == ParseError::Truncated)
          return Error{ParseError::RdataLength, rdata_start};
        return s;
      }
    }
    if (rd.remaining() != fixed_after) return Error{ParseError::RdataLength, rdata_start};
    return {};
  };
  switch (type) {
    case RRType::A:
      return need_exact(4);
    case RRType::AAAA:
      return need_exact(16);
    case RRType::NS:
    case RRType::CNAME:
    case RRType::PTR:
    case RRType::DNAME:
      return fixed_then_name(0, 0, 1);
    case RRType::MX:
      return fixed_then_name(2, 0, 1);
    case RRType::SRV:
      return fixed_then_name(6, 0, 1);
    case RRType::SOA:
      return fixed_then_name(0, 20, 2);
    case RRType::TXT: {
      // One or more <character-string>s that fill the RDATA exactly (RFC 1035 §3.3.14).
      if (len == 0) return Error{ParseError::RdataLength, rdata_start};
      while (!rd.at_end()) {
        auto l = rd.u8().value();
        if (!rd.skip(l)) return Error{ParseError::RdataLength, rdata_start};
      }
      return {};
    }
    case RRType::CAA: {
      // flags, tag length (1..255), tag, value (RFC 8659 §4.1).
      if (len < 2) return Error{ParseError::RdataLength, rdata_start};
      (void)rd.skip(1);
      auto tag_len = rd.u8().value();
      if (tag_len == 0 || rd.remaining() < tag_len)
        return Error{ParseError::RdataLength, rdata_start};
      return {};
    }
    default:
      return {};  // RFC 3597: opaque
  }
}

}  // namespace

Status Message::parse(std::span<const uint8_t> packet, ParseMode mode) {
  questions_.clear();
  records_.clear();
  edns_.reset();
  section_end_[0] = section_end_[1] = section_end_[2] = 0;
  if (packet.size() > kMaxMessage) {
    if (mode == ParseMode::Strict) return Error{ParseError::TrailingBytes, kMaxMessage};
    packet = packet.first(kMaxMessage);
  }
  packet_ = packet;
  WireReader r(packet);
  auto h = Header::read(r);
  if (!h) return h.error();
  header_ = *h;

  // Counts can lie: before looping (or reserving), check that the smallest possible encoding
  // of what the counts claim fits in the bytes that remain.
  const std::size_t nrecords = std::size_t{header_.ancount} + header_.nscount + header_.arcount;
  if (header_.qdcount * kMinQuestion + nrecords * kMinRecord > r.remaining()) {
    return Error{ParseError::CountMismatch, kHeaderSize};
  }

  questions_.reserve(header_.qdcount);
  for (unsigned i = 0; i < header_.qdcount; ++i) {
    if (r.at_end()) return Error{ParseError::CountMismatch, r.offset()};
    Question q;
    q.offset = static_cast<uint16_t>(r.offset());
    auto name = read_name(r);
    if (!name) return name.error();
    q.name = *name;
    auto type = r.u16();
    if (!type) return type.error();
    auto klass = r.u16();
    if (!klass) return klass.error();
    q.type = static_cast<RRType>(*type);
    q.klass = *klass;
    q.end = static_cast<uint16_t>(r.offset());
    questions_.push_back(q);
  }

  records_.reserve(nrecords);
  const uint16_t counts[3] = {header_.ancount, header_.nscount, header_.arcount};
  for (int s = 0; s < 3; ++s) {
    for (unsigned i = 0; i < counts[s]; ++i) {
      if (r.at_end()) return Error{ParseError::CountMismatch, r.offset()};
      const std::size_t start = r.offset();
      if (auto st = skip_name(r); !st) return st.error();
      const std::size_t owner_len = r.offset() - start;
      auto type = r.u16();
      if (!type) return type.error();
      auto klass = r.u16();
      if (!klass) return klass.error();
      const std::size_t ttl_offset = r.offset();
      auto ttl = r.u32();
      if (!ttl) return ttl.error();
      const std::size_t rdlen_offset = r.offset();
      auto rdlen = r.u16();
      if (!rdlen) return rdlen.error();
      const std::size_t rdata_offset = r.offset();
      auto rd = r.sub(*rdlen);
      if (!rd) return Error{ParseError::Truncated, rdlen_offset};
      const auto rrtype = static_cast<RRType>(*type);

      if (rrtype == RRType::OPT) {
        // RFC 6891 §6.1.1: one OPT, in the additional section, owned by the root.
        if (s != 2 || owner_len != 1 || packet[start] != 0) return Error{ParseError::BadOpt, start};
        if (edns_) return Error{ParseError::MultipleOpt, start};
        auto opts = packet.subspan(rdata_offset, *rdlen);
        if (auto st = validate_edns_options(opts, rdata_offset); !st) return st.error();
        Edns e;
        e.udp_size = *klass;
        e.ext_rcode_high = static_cast<uint8_t>(*ttl >> 24);
        e.version = static_cast<uint8_t>(*ttl >> 16);
        e.flags = static_cast<uint16_t>(*ttl);
        e.record_offset = start;
        e.options_wire = opts;
        edns_ = e;
      } else {
        if (auto st = validate_rdata(rrtype, *rd, rdata_offset); !st) return st.error();
        records_.push_back(RecordView{
            .offset = static_cast<uint16_t>(start),
            .ttl_offset = static_cast<uint16_t>(ttl_offset),
            .rdata_offset = static_cast<uint16_t>(rdata_offset),
            .rdlength = *rdlen,
            .type = rrtype,
            .klass = *klass,
            .ttl = *ttl,
            .section = static_cast<Section>(s),
        });
      }
      // Cannot fail: sub() checked the length.
      if (!r.skip(*rdlen)) return Error{ParseError::Truncated, rdata_offset};
    }
    section_end_[s] = records_.size();
  }

  if (mode == ParseMode::Strict && !r.at_end()) return Error{ParseError::TrailingBytes, r.offset()};
  return {};
}

std::span<const RecordView> Message::section(Section s) const noexcept {
  const auto i = static_cast<std::size_t>(s);
  const std::size_t begin = i == 0 ? 0 : section_end_[i - 1];
  return std::span<const RecordView>(records_).subspan(begin, section_end_[i] - begin);
}

RCode Message::rcode() const noexcept {
  unsigned high = edns_ ? edns_->ext_rcode_high : 0;
  return static_cast<RCode>((high << 4) | header_.rcode_low());
}

Name Message::owner(const RecordView& rr) const noexcept {
  WireReader r(packet_, rr.offset);
  auto n = read_name(r);
  return n ? *n : Name();
}

}  // namespace hg::wire
