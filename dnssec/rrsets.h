// The RRsets of a message section, ready for rrset_check.h: records grouped by owner, type
// and class, each record's RDATA in canonical form, and the RRSIGs of the same owner and class
// that cover the type. A validator works on RRsets, never on single records (RFC 4034 §3:
// an RRSIG covers a whole RRset).
#pragma once

#include <vector>

#include "dnssec/rrset_check.h"
#include "wire/message.h"
#include "wire/types.h"

namespace hg::dnssec {

/// One RRset of a section, and whether it can be checked at all.
struct SectionRrset {
  Rrset set;
  /// A record of it has RDATA whose canonical form is not made here (signed_data.h
  /// canonical_rdata: names of types this project does not decode, or malformed RDATA).
  bool uncheckable = false;
};

/// The RRsets of section `s` of `m`, in order of first appearance. The TTL of each is the
/// smallest of its records' (RFC 2181 §5.2 wants them equal; the smallest is the safe
/// reading). RRSIGs are attached to the RRset they cover, never an RRset themselves; an RRSIG
/// that covers nothing in the section is dropped. At most `limit` RRsets (a message of 65,535
/// bytes holds at most a few thousand records: the cap keeps the quadratic grouping bounded).
std::vector<SectionRrset> section_rrsets(const wire::Message& m, wire::Section s,
                                         std::size_t limit = 256);

}  // namespace hg::dnssec
