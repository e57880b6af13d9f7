// ClientQuery: what one client asked, with everything its answer must echo. One type from
// admission (resolver/query/admission.h fills it in) through the cache renderer (cache/entry.h) to
// a client waiting for the upstream (resolver/query/shared.h: a Waiter keeps one).
//
// It holds no bytes of its own: `question` and `qname` point into the packet the client sent,
// so a ClientQuery is valid while that packet is. Whatever keeps one longer (a waiter) keeps
// the question bytes beside it.
#pragma once

#include <cstdint>
#include <span>

#include "wire/header.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::cache {

struct ClientQuery {
  uint16_t id = 0;
  uint16_t flags = 0;  ///< the client's header flags (RD, CD, AD)
  /// The client's question bytes, qname through QCLASS, exactly as received (its letter case).
  /// The renderer's precondition (not checked: no name parsing on the hot path): the question
  /// of the key the hit was looked up with — same name up to case, so the same length as ours.
  std::span<const uint8_t> question = {};
  /// As sent (case preserved). Points into the Message admit_query() parsed, so it is valid
  /// while that message is; not copied, because this is the cache-hit path. Null in a
  /// ClientQuery rebuilt for a waiter (Waiter::client()), which only renders answers.
  const wire::Name* qname = nullptr;
  wire::RRType qtype = wire::RRType::A;
  uint16_t qclass = 1;
  bool has_edns = false;
  bool dnssec_ok = false;
  uint16_t udp_size = 512;  ///< the largest UDP answer the client takes (512 without EDNS)

  bool rd() const noexcept { return (flags & wire::flag::RD) != 0; }
  bool cd() const noexcept { return (flags & wire::flag::CD) != 0; }
  /// The client's AD bit (RFC 6840 §5.7: it asks for AD in the answer).
  bool ad() const noexcept { return (flags & wire::flag::AD) != 0; }
};

}  // namespace hg::cache
