// rewrite_without_opt: a parsed message written again by our own WireWriter, without its OPT
// record, straight from the parsed view — the same bytes as write_message(to_owned(m)) with
// the owned model's `edns` cleared, but without building the owned model (no allocation).
//
// The resolver does this to every upstream answer before caching it (QueryEngine::
// normalize_upstream), so that every compression pointer in a cached answer was written by us.
//
// Must not include anything beyond the standard library and wire/.
#pragma once

#include "wire/message.h"
#include "wire/owned.h"
#include "wire/writer.h"

namespace hg::wire {

/// Writes `m` into the empty writer `w`: the header with recomputed counts, the questions,
/// then every record in section order — owner names decompressed and compressed again by the
/// writer; RDATA names the same way (compressed only in rdata_names_compressible() types);
/// RDATA without names copied as it is, since reading and writing it back cannot change it —
/// and no OPT record. Truncation as write_message(): a record that does not fit ends the
/// message, TC=1 if it was an answer or authority record. ok=false when not even the header
/// and questions fit, or a record's RDATA does not decode (parse() rules that out).
///
/// `view`, when given and the outcome is ok, is set to the view of the bytes written — what
/// view->parse(w.written(), ParseMode::Strict) would give, without parsing them again. It
/// refers to the writer's buffer, which must outlive it. `view` must not be `m`.
WriteOutcome rewrite_without_opt(WireWriter& w, const Message& m, Message* view = nullptr);

}  // namespace hg::wire
