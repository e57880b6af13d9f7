// Query admission: turns one client datagram or TCP message into either a ClientQuery to
// resolve, a ready error response (FORMERR, NOTIMP, REFUSED, BADVERS), or a silent drop.
//
// The rules (docs/architecture.md §2, step 2), in the order applied:
//   - shorter than a header, or QR=1 (a response sent to us; answering could loop): drop;
//   - client outside --allow: REFUSED, and nothing else — EDE 18 Prohibited and the question
//     when the message has exactly one, else the bare header (over TCP such a client is
//     disconnected at accept and never gets here: resolver/net/conn_admission.h);
//   - the message does not parse: FORMERR (header only; ID, opcode and RD echoed);
//   - opcode other than QUERY: NOTIMP;
//   - QDCOUNT != 1: FORMERR;
//   - EDNS version other than 0: BADVERS, with an OPT record (RFC 6891 §6.1.3);
//   - class other than IN: REFUSED (EDE 21 Not Supported) — hourglass forwards the Internet
//     class only; CHAOS queries such as version.bind are not ours to answer;
//   - QTYPE AXFR/IXFR: REFUSED (zone transfers are not a stub resolver's business); meta
//     types OPT/TSIG-range (RFC 6895 §3.1, 128-255 except ANY): FORMERR.
// Everything else becomes a ClientQuery, which keeps the client's own question bytes so the
// answer echoes them (its letter case) byte for byte.
//
// No allocation, no exceptions. Only wire/ (and the ClientQuery of cache/) is used.
#pragma once

#include <cstdint>
#include <span>

#include "cache/client_query.h"
#include "wire/edns.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::resolver {

/// What a client asked, with everything its answer must echo: one type from admission through
/// the cache renderer to a waiting client (cache/client_query.h).
using ClientQuery = cache::ClientQuery;

enum class Admission : uint8_t {
  Resolve,  ///< `query` is filled in
  Respond,  ///< an error response was written to the output buffer
  Drop,     ///< send nothing
};

/// Why a query was answered with an error or dropped (for metrics and the query log).
enum class Rejection : uint8_t {
  None,
  TooShort,
  IsResponse,
  Malformed,
  NotQuery,
  BadQuestionCount,
  BadEdnsVersion,
  NotAllowed,
  BadClass,
  ZoneTransfer,
  MetaType,
};
const char* to_string(Rejection r) noexcept;

struct AdmissionResult {
  Admission action = Admission::Drop;
  Rejection why = Rejection::None;
  wire::Error parse_error{wire::ParseError::Truncated, 0};  ///< when why == Malformed
  std::size_t response_size = 0;  ///< bytes of `out` written when action == Respond
};

/// Examines `packet` (one DNS message from a client). `scratch` is reused parse state.
/// `allowed` says whether the client's address passed the ACL. On Respond, the error answer is
/// in out[0, response_size). `out` must hold at least 512 bytes.
AdmissionResult admit_query(std::span<const uint8_t> packet, bool allowed, wire::Message& scratch,
                            ClientQuery& query, std::span<uint8_t> out) noexcept;

}  // namespace hg::resolver
