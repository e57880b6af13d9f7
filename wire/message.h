// Message: a parsed view of one DNS message — the header, the question(s), and the offsets of
// every resource record — built in one bounds-checked pass over the packet without copying it.
//
// The view refers to the caller's packet bytes, which must outlive it. A Message can be
// reused: parse() keeps its vectors' capacity, so steady-state parsing does not allocate.
//
//   packet: | header 12 | question: qname qtype qclass | RR: owner type class TTL rdlen rdata | ...
//                                                          ^offset      ^ttl_offset ^rdata_offset
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "wire/edns.h"
#include "wire/header.h"
#include "wire/name.h"
#include "wire/result.h"
#include "wire/types.h"

namespace hg::wire {

struct Question {
  Name name;  ///< as sent, letter case preserved
  RRType type = RRType::A;
  uint16_t klass = 1;
  uint16_t offset = 0;  ///< where the question starts (the qname)
  uint16_t end = 0;     ///< one past the QCLASS field
};

struct RecordView {
  uint16_t offset;        ///< start of the owner name
  uint16_t ttl_offset;    ///< the 4-byte TTL field
  uint16_t rdata_offset;  ///< first RDATA byte
  uint16_t rdlength;
  RRType type;
  uint16_t klass;
  uint32_t ttl;  ///< as on the wire (RFC 2181 §8 handling is the cache's job)
  Section section;

  /// One past the record's last byte.
  uint16_t end() const noexcept { return static_cast<uint16_t>(rdata_offset + rdlength); }
};

enum class ParseMode : uint8_t {
  /// Queries from clients: bytes after the last counted record are an error (TrailingBytes).
  Strict,
  /// Answers from upstream: trailing bytes are ignored (be liberal in what you accept).
  Lenient,
};

class Message {
 public:
  /// Parses `packet` and validates every name, every count and every known RDATA's length.
  /// On error the view is left in an unspecified (but safe, empty-able) state.
  /// Errors: ShortHeader, Truncated, CountMismatch, TrailingBytes, RdataLength, BadOpt,
  /// MultipleOpt, and every name error of read_name().
  Status parse(std::span<const uint8_t> packet, ParseMode mode = ParseMode::Lenient);

  std::span<const uint8_t> packet() const noexcept { return packet_; }
  const Header& header() const noexcept { return header_; }
  std::span<const Question> questions() const noexcept { return questions_; }
  /// All records in packet order (answer, authority, additional), the OPT record excluded.
  std::span<const RecordView> records() const noexcept { return records_; }
  std::span<const RecordView> section(Section s) const noexcept;
  /// The OPT record, when present (it is not among records()).
  const std::optional<Edns>& edns() const noexcept { return edns_; }
  /// The full 12-bit RCODE (header low bits + OPT high bits).
  RCode rcode() const noexcept;
  /// The owner name of a record (decompressed). The record came from this message, so the
  /// name was validated by parse(); this cannot fail.
  Name owner(const RecordView& rr) const noexcept;

 private:
  // rewrite_without_opt() (wire/reencode.h) fills a view of what it writes as it writes it.
  friend struct MessageViewBuilder;
  std::span<const uint8_t> packet_;
  Header header_;
  std::vector<Question> questions_;
  std::vector<RecordView> records_;
  std::size_t section_end_[3] = {0, 0, 0};  // index one past each section in records_
  std::optional<Edns> edns_;
};

}  // namespace hg::wire
