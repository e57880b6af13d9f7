#include "resolver/query/admission.h"

#include "resolver/query/responder.h"
#include "wire/header.h"

namespace hg::resolver {

using wire::RCode;
using wire::RRType;

const char* to_string(Rejection r) noexcept {
  switch (r) {
    case Rejection::None:
      return "none";
    case Rejection::TooShort:
      return "too-short";
    case Rejection::IsResponse:
      return "is-response";
    case Rejection::Malformed:
      return "malformed";
    case Rejection::NotQuery:
      return "not-query";
    case Rejection::BadQuestionCount:
      return "bad-question-count";
    case Rejection::BadEdnsVersion:
      return "bad-edns-version";
    case Rejection::NotAllowed:
      return "not-allowed";
    case Rejection::BadClass:
      return "bad-class";
    case Rejection::ZoneTransfer:
      return "zone-transfer";
    case Rejection::MetaType:
      return "meta-type";
  }
  return "unknown";
}

namespace {

// A header-only answer (no question): for messages we could not parse. ID, opcode and RD are
// echoed so the client can match it (RFC 1035 §4.1.1 FORMERR).
std::size_t write_bare(std::span<uint8_t> out, const wire::Header& req, RCode rcode) {
  wire::Header h;
  h.id = req.id;
  h.flags = static_cast<uint16_t>(wire::flag::QR | wire::flag::RA |
                                  (req.flags & wire::kOpcodeMask) | (req.flags & wire::flag::RD));
  h.set_rcode_low(static_cast<uint8_t>(static_cast<unsigned>(rcode) & 0xF));
  h.write_unchecked(out.data());
  return wire::kHeaderSize;
}

}  // namespace

AdmissionResult admit_query(std::span<const uint8_t> packet, bool allowed, wire::Message& scratch,
                            ClientQuery& q, std::span<uint8_t> out) noexcept {
  AdmissionResult res;
  if (packet.size() < wire::kHeaderSize) {
    res.why = Rejection::TooShort;
    return res;
  }
  wire::WireReader hr(packet);
  const wire::Header req = wire::Header::read(hr).value();
  if (req.qr()) {
    res.why = Rejection::IsResponse;
    return res;
  }
  auto respond = [&](Rejection why, std::size_t size) {
    res.action = size > 0 ? Admission::Respond : Admission::Drop;
    res.why = why;
    res.response_size = size;
    return res;
  };

  const auto parsed = scratch.parse(packet, wire::ParseMode::Strict);
  const bool one_question = parsed.has_value() && req.qdcount == 1;
  // A client outside --allow learns nothing but REFUSED, whatever it sent: the ACL comes
  // before every other check (with the question echoed when there is exactly one).
  if (!allowed && !one_question)
    return respond(Rejection::NotAllowed, write_bare(out, req, RCode::Refused));
  if (!parsed) {
    res.parse_error = parsed.error();
    return respond(Rejection::Malformed, write_bare(out, req, RCode::FormErr));
  }
  if (allowed && req.opcode() != wire::Opcode::Query)
    return respond(Rejection::NotQuery, write_bare(out, req, RCode::NotImp));
  if (req.qdcount != 1)
    return respond(Rejection::BadQuestionCount, write_bare(out, req, RCode::FormErr));

  const wire::Question& question = scratch.questions()[0];
  q.id = req.id;
  q.flags = req.flags;
  q.question = packet.subspan(question.offset, question.end - question.offset);
  q.qname = &question.name;
  q.qtype = question.type;
  q.qclass = question.klass;
  const auto& edns = scratch.edns();
  q.has_edns = edns.has_value();
  q.dnssec_ok = edns && edns->dnssec_ok();
  q.udp_size = edns ? edns->effective_udp_size() : wire::kMinUdpPayload;

  if (!allowed) {
    return respond(Rejection::NotAllowed,
                   write_error(out, q, RCode::Refused, EdeSpec{wire::ede::Prohibited, {}}));
  }
  if (edns && edns->version != 0) {
    // RFC 6891 §6.1.3: BADVERS (16) = extended rcode 1, low bits 0; the OPT carries version 0.
    return respond(Rejection::BadEdnsVersion, write_error(out, q, RCode::BadVers, std::nullopt));
  }
  if (q.qclass != static_cast<uint16_t>(wire::RRClass::IN)) {
    return respond(Rejection::BadClass,
                   write_error(out, q, RCode::Refused,
                               EdeSpec{wire::ede::NotSupported, "only class IN is served"}));
  }
  const auto t = static_cast<uint16_t>(q.qtype);
  if (q.qtype == RRType::AXFR || q.qtype == RRType::IXFR) {
    return respond(Rejection::ZoneTransfer,
                   write_error(out, q, RCode::Refused,
                               EdeSpec{wire::ede::NotSupported, "zone transfers not served"}));
  }
  // RFC 6895 §3.1: 128-255 are meta/q-types; of those only ANY (and the transfers above) may
  // be asked. OPT (41) is a pseudo-type that never appears in a question.
  if (q.qtype == RRType::OPT || (t >= 128 && t <= 255 && q.qtype != RRType::ANY)) {
    return respond(Rejection::MetaType, write_error(out, q, RCode::FormErr, std::nullopt));
  }
  res.action = Admission::Resolve;
  return res;
}

}  // namespace hg::resolver
