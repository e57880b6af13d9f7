// Responder: the bytes hourglass sends back to clients that are not cache renders —
// error answers (FORMERR/NOTIMP/REFUSED/SERVFAIL/BADVERS), the OPT record with an optional
// Extended DNS Error, and pass-through of upstream answers that the cache did not keep.
//
// Every answer: the client's ID and question bytes, RD copied, QR=1, RA=1, AA=0; an OPT
// record iff the client sent one, advertising our payload size (1232); AD only if the client
// set DO or AD (RFC 6840 §5.8); CD copied (RFC 4035 §3.2.2).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "resolver/query/admission.h"
#include "wire/edns.h"
#include "wire/message.h"
#include "wire/types.h"
#include "wire/writer.h"

namespace hg::resolver {

/// An Extended DNS Error to attach (RFC 8914): only sent to clients that speak EDNS.
using EdeSpec = wire::ExtendedError;

/// hourglass's OPT record for an answer: payload 1232, version 0, DO echoed, the high 8 bits
/// of `rcode`, and the EDE option when given.
wire::OptSpec response_opt(bool dnssec_ok, wire::RCode rcode, std::optional<EdeSpec> ede) noexcept;

/// Writes a complete answer with no records: header, the client's question, and an OPT (+EDE)
/// if the client sent EDNS. Returns the size written (0 if `out` is too small).
std::size_t write_error(std::span<uint8_t> out, const ClientQuery& q, wire::RCode rcode,
                        std::optional<EdeSpec> ede) noexcept;

/// The RFC 8482 answer to a query of type ANY: one synthesized HINFO record, CPU "RFC8482"
/// and OS "", owned by the question name, TTL 3789 s (about an hour; RFC 8482 §4.2 leaves it
/// to the responder), then our OPT if the client sent EDNS. Returns the size written (0 if it
/// does not fit `limit`).
std::size_t write_minimal_any(std::span<uint8_t> out, std::size_t limit,
                              const ClientQuery& q) noexcept;

/// Renders an upstream answer for one client without the cache: the client's ID, flags and
/// question bytes, then the upstream's records (its OPT removed), then our OPT/EDE when the
/// client sent EDNS. Beyond `limit` bytes the records that do not fit are left out, and when
/// one the client needs is among them (an answer record, or a negative answer's SOA) only
/// header and question are sent, with TC=1 (RFC 2181 §9).
/// `upstream` must be a parsed answer whose question has the same length as the client's
/// (same name, only letter case may differ), so its compression pointers stay valid.
/// Returns the size written; 0 if not even the header and question fit.
std::size_t render_passthrough(std::span<uint8_t> out, std::size_t limit, const ClientQuery& q,
                               const wire::Message& upstream, std::optional<EdeSpec> ede) noexcept;

}  // namespace hg::resolver
