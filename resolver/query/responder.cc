#include "resolver/query/responder.h"

#include <algorithm>

#include "wire/header.h"

namespace hg::resolver {

using wire::RCode;

wire::OptSpec response_opt(bool dnssec_ok, RCode rcode, std::optional<EdeSpec> ede) noexcept {
  wire::OptSpec spec;
  spec.ext_rcode_high = static_cast<uint8_t>((static_cast<unsigned>(rcode) >> 4) & 0xFF);
  spec.flags = dnssec_ok ? wire::kEdnsDoBit : 0;
  spec.ede = ede;
  return spec;
}

namespace {

// Header + question. Returns the writer position after the question, or 0 if no room.
bool write_head(wire::WireWriter& w, const ClientQuery& q, uint16_t flags, uint16_t ancount,
                uint16_t nscount, uint16_t arcount) {
  wire::Header h;
  h.id = q.id;
  h.flags = flags;
  h.qdcount = 1;
  h.ancount = ancount;
  h.nscount = nscount;
  h.arcount = arcount;
  uint8_t hb[wire::kHeaderSize];
  h.write_unchecked(hb);
  return w.bytes(hb) && w.bytes(q.question);
}

constexpr std::size_t kCountsOffset = 6;  // ANCOUNT, NSCOUNT, ARCOUNT follow ID, flags, QDCOUNT

}  // namespace

std::size_t write_error(std::span<uint8_t> out, const ClientQuery& q, RCode rcode,
                        std::optional<EdeSpec> ede) noexcept {
  wire::WireWriter w(out);
  const auto low = static_cast<uint16_t>(static_cast<unsigned>(rcode) & 0xF);
  if (!write_head(w, q, wire::answer_flags(q.flags, q.dnssec_ok, low), 0, 0, q.has_edns ? 1 : 0))
    return 0;
  if (q.has_edns && !wire::write_opt(w, response_opt(q.dnssec_ok, rcode, ede))) return 0;
  return w.size();
}

std::size_t write_minimal_any(std::span<uint8_t> out, std::size_t limit,
                              const ClientQuery& q) noexcept {
  wire::WireWriter w(out, limit);
  const uint16_t flags = wire::answer_flags(q.flags, q.dnssec_ok, 0);
  if (!write_head(w, q, flags, 1, 0, q.has_edns ? 1 : 0)) return 0;
  // Owner: a pointer to the question's name, which write_head put right after the header.
  const uint8_t hinfo[] = {0xC0,
                           static_cast<uint8_t>(wire::kHeaderSize),
                           0,
                           static_cast<uint8_t>(wire::RRType::HINFO),
                           static_cast<uint8_t>(q.qclass >> 8),
                           static_cast<uint8_t>(q.qclass & 0xFF),
                           0,
                           0,
                           0x0E,
                           0xCD,  // TTL 3789
                           0,
                           9,  // RDLENGTH: CPU <character-string>, OS <character-string>
                           7,
                           'R',
                           'F',
                           'C',
                           '8',
                           '4',
                           '8',
                           '2',
                           0};
  if (!w.bytes(hinfo)) return 0;
  if (q.has_edns && !wire::write_opt(w, response_opt(q.dnssec_ok, RCode::NoError, std::nullopt)))
    return 0;
  return w.size();
}

std::size_t render_passthrough(std::span<uint8_t> out, std::size_t limit, const ClientQuery& q,
                               const wire::Message& upstream, std::optional<EdeSpec> ede) noexcept {
  wire::WireWriter w(out, limit);
  const auto up = upstream.packet();
  const RCode rcode = upstream.rcode();
  const uint16_t flags = wire::answer_flags(q.flags, q.dnssec_ok, upstream.header().flags);
  if (!write_head(w, q, flags, 0, 0, 0)) return 0;
  const std::size_t after_question = w.mark();
  const auto opt = response_opt(q.dnssec_ok, rcode, ede);
  const std::size_t reserve = q.has_edns ? wire::opt_size(opt) : 0;
  if (w.room() < reserve) return 0;

  // The upstream's records, in order, copied byte for byte. Compression pointers inside them
  // stay valid because our header and question occupy exactly the bytes the upstream's did.
  // The upstream's OPT is skipped; records after it (additional data, rare) are dropped
  // because a pointer into them would shift.
  const std::size_t opt_at = upstream.edns() ? upstream.edns()->record_offset : SIZE_MAX;
  uint16_t counts[3] = {0, 0, 0};
  bool truncated = false;
  const bool negative = rcode == RCode::NXDomain || upstream.section(wire::Section::Answer).empty();
  for (const auto& rr : upstream.records()) {
    if (rr.offset > opt_at) break;
    const auto s = static_cast<std::size_t>(rr.section);
    if (w.room() < std::size_t{rr.end()} - rr.offset + reserve) {
      // RFC 2181 §9: TC only when data the client needs is missing — any answer record, or
      // the authority (SOA) of a negative answer; a positive answer's NS and any additional
      // record are optional (the same rule as the cache's render_entry).
      truncated = rr.section == wire::Section::Answer ||
                  (negative && rr.section == wire::Section::Authority);
      if (truncated) {
        // Header and question only, as render_entry does: the client takes the TCP answer.
        w.rollback(after_question);
        counts[0] = counts[1] = counts[2] = 0;
      }
      break;
    }
    if (!w.bytes(up.subspan(rr.offset, rr.end() - rr.offset))) break;
    ++counts[s];
  }
  if (q.has_edns && !wire::write_opt(w, opt)) return 0;
  w.patch_u16(kCountsOffset, counts[0]);
  w.patch_u16(kCountsOffset + 2, counts[1]);
  w.patch_u16(kCountsOffset + 4, static_cast<uint16_t>(counts[2] + (q.has_edns ? 1 : 0)));
  if (truncated) {
    w.patch_u16(2, static_cast<uint16_t>(flags | wire::flag::TC));
  }
  return w.size();
}

}  // namespace hg::resolver
