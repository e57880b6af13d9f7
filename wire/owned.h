// OwnedMessage: a DNS message as plain values — header, questions, records with typed RDATA,
// and EDNS — that owns all its bytes and can be edited and written back to wire form.
//
// This is the slow, convenient model for tools, tests, the fuzzer's round trip and rarely
// built answers; the hot path works on wire bytes through Message and WireWriter instead.
//
// Must not include anything beyond the standard library and wire/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wire/edns.h"
#include "wire/header.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/rdata.h"
#include "wire/result.h"
#include "wire/types.h"
#include "wire/writer.h"

namespace hg::wire {

struct OwnedQuestion {
  Name name;
  RRType type = RRType::A;
  uint16_t klass = static_cast<uint16_t>(RRClass::IN);
  friend bool operator==(const OwnedQuestion&, const OwnedQuestion&) = default;
};

struct OwnedRecord {
  Name owner;
  RRType type = RRType::A;
  uint16_t klass = static_cast<uint16_t>(RRClass::IN);
  uint32_t ttl = 0;
  Rdata rdata;
  friend bool operator==(const OwnedRecord&, const OwnedRecord&) = default;
};

struct OwnedOption {
  uint16_t code = 0;
  std::vector<uint8_t> data;
  friend bool operator==(const OwnedOption&, const OwnedOption&) = default;
};

struct OwnedEdns {
  uint16_t udp_size = kDefaultEdnsPayload;
  uint8_t ext_rcode_high = 0;
  uint8_t version = 0;
  uint16_t flags = 0;  ///< kEdnsDoBit and the Z bits
  std::vector<OwnedOption> options;

  bool dnssec_ok() const noexcept { return (flags & kEdnsDoBit) != 0; }
  friend bool operator==(const OwnedEdns&, const OwnedEdns&) = default;
};

/// Names compare case-insensitively (RFC 4343), so == is semantic equality; use
/// identical() to also require the same letter case.
struct OwnedMessage {
  Header header;  ///< id and flags; write_message() recomputes the four counts
  std::vector<OwnedQuestion> questions;
  std::vector<OwnedRecord> answer;
  std::vector<OwnedRecord> authority;
  std::vector<OwnedRecord> additional;  ///< the OPT record is not here but in `edns`
  std::optional<OwnedEdns> edns;

  std::vector<OwnedRecord>& section(Section s) noexcept;
  const std::vector<OwnedRecord>& section(Section s) const noexcept;
  /// The full 12-bit RCODE (header low bits + OPT high bits).
  RCode rcode() const noexcept;
  /// Sets the header's low bits and, when EDNS is present, the OPT's high bits.
  void set_rcode(RCode r) noexcept;

  friend bool operator==(const OwnedMessage&, const OwnedMessage&) = default;
};

/// Equality that also compares the letter case of every name (owner, question and RDATA).
bool identical(const OwnedMessage& a, const OwnedMessage& b);

/// Copies a parsed message into the owned model, decoding every record's RDATA.
/// Errors: those of read_rdata(); none for a message that Message::parse() accepted.
Result<OwnedMessage> to_owned(const Message& m);

struct WriteOutcome {
  bool ok = false;          ///< header, questions and OPT were written
  bool truncated = false;   ///< answer or authority records were left out; TC=1 was set
  std::size_t records = 0;  ///< answer + authority + additional records written (OPT excluded)
  std::size_t dropped = 0;  ///< records left out by a rule (rewrite_without_opt's RewriteRules)
  std::size_t clamped = 0;  ///< TTLs with the top bit set, written as 0 (RewriteRules)
  std::size_t blocked = 0;  ///< A/AAAA records left out by RewriteRules::drop_address
};

/// Writes `m` into `w` (which should be empty): header with recomputed counts, questions,
/// then records in section order with names compressed (rdata_names_compressible()), then
/// the OPT record. When the records do not all fit the writer's limit, the message ends at
/// the last record that fit, keeping room for the OPT record (RFC 6891 §7), and TC=1 is set
/// if an answer or authority record was dropped — not for additional records alone
/// (RFC 2181 §9). ok=false when not even the header, questions and OPT fit.
WriteOutcome write_message(WireWriter& w, const OwnedMessage& m);

/// Convenience: write_message into a fresh buffer of at most `limit` octets.
std::vector<uint8_t> to_wire(const OwnedMessage& m, std::size_t limit = 65535);

}  // namespace hg::wire
