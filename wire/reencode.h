// rewrite_without_opt: a parsed message written again by our own WireWriter, without its OPT
// record, straight from the parsed view — the same bytes as write_message(to_owned(m)) with
// the owned model's `edns` cleared, but without building the owned model (no allocation).
//
// AnswerNormalizer (below) does this to every untrusted answer before it goes into a cache —
// the daemon's upstream and fleet answers, the cache file's entries, the replay's recorded
// answers — so that every compression pointer in a cached answer was written by us.
//
// Must not include anything beyond the standard library and wire/.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

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
/// What rewrite_without_opt() changes on the way through; all off, the records are those of `m`.
struct RewriteRules {
  /// RFC 4035 §3.2.1: for a client that did not set DO, RRSIG, NSEC and NSEC3 records are left
  /// out of every section unless the question asks for that type. Counted in `dropped`.
  bool strip_dnssec = false;
  /// RFC 2181 §8: a TTL with the top bit set (2^31 and above) is written as 0. Counted in
  /// `clamped`.
  bool clamp_ttl = false;
  /// The header is written with AD=0 (an AD nobody here trusts).
  bool clear_ad = false;
  /// Only the question's chain is kept (see chain_records()); every other record is left out
  /// and counted in `dropped`.
  bool chain_only = false;
  /// Called with the address (4 or 16 bytes) of every A and AAAA record, in any section;
  /// true leaves the record out, counted in `blocked`. Null: every address is kept.
  bool (*drop_address)(const void* context, std::span<const uint8_t> address) = nullptr;
  const void* drop_context = nullptr;
  /// TTLs above this are written as it, in every section (not counted): a validated answer
  /// is kept no longer than its signatures allow (RFC 4035 §5.3.3).
  uint32_t max_ttl = 0xFFFFFFFFu;
};

/// Marks, per record of `m` (in records() order), whether it belongs to the answer to
/// `m`'s first question — the records a cache may keep and a client may be given:
/// - answer: records owned by the question name or by a name a kept CNAME leads to (up to 16
///   names), and DNAMEs above one of those names;
/// - authority: SOA, NS and DS owned by a zone at or above a chain name, and NSEC, NSEC3 and
///   RRSIG owned in such a zone;
/// - additional: A, AAAA and RRSIG owned by the target of a kept NS, MX or SRV record.
/// Everything else (an A record for another name, NS for the root or an unrelated zone,
/// glue nobody refers to) is what a poisoning attempt adds, and is marked 0. `keep` is resized
/// to records().size(). A message without a question keeps nothing.
void chain_records(const Message& m, std::vector<uint8_t>& keep);

/// RRSIG, NSEC or NSEC3: the records RFC 4035 §3.2.1 keeps from clients without DO.
constexpr bool is_dnssec_proof_type(RRType t) noexcept {
  return t == RRType::RRSIG || t == RRType::NSEC || t == RRType::NSEC3;
}

WriteOutcome rewrite_without_opt(WireWriter& w, const Message& m, Message* view = nullptr,
                                 const RewriteRules& rules = {});

/// Why AnswerNormalizer::normalize() refused an answer.
enum class NormalizeStatus : uint8_t {
  Ok,
  Malformed,  ///< Message::parse() (Lenient) refused it: AnswerNormalizer::parse_error() says why
  TooLarge,   ///< over 65,535 bytes, or written again by our writer it would not fit in 65,535
};

/// "ok", "malformed", "too-large".
std::string_view to_string(NormalizeStatus s) noexcept;

/// The one way an untrusted answer is made fit for a cache insert: parsed (Lenient: bytes
/// after the last record are ignored, as from any upstream) and written again by
/// rewrite_without_opt() into a buffer of its own, whole — an answer that would be truncated
/// is refused, never shortened. The cache copies the stored sections to clients with
/// rewritten headers and TTLs, so every compression pointer in them must lead to name bytes
/// that never change; an untrusted answer may point anywhere a parser accepts (into its RDATA
/// lengths, its TTL fields...). Ours only point at names we wrote. The OPT record and any
/// trailing bytes are dropped.
///
/// Used by the daemon for upstream and fleet answers (QueryEngine::normalize_upstream), by the
/// cache file loader (cache/persist.cc) and by hourglass-rehearse's replay (seed, fetch).
/// Allocates nothing once its vectors have grown (65,535 bytes of buffer, one per holder).
class AnswerNormalizer {
 public:
  AnswerNormalizer();

  /// On Ok, message() is the view of the bytes written (what a Strict parse of bytes()
  /// gives); on anything else message() is empty and nothing may be inserted.
  NormalizeStatus normalize(std::span<const uint8_t> answer, const RewriteRules& rules = {});
  /// Records left out and TTLs clamped by the rules in the last normalize() that returned Ok.
  std::size_t dropped() const noexcept { return dropped_; }
  std::size_t clamped() const noexcept { return clamped_; }
  std::size_t blocked() const noexcept { return blocked_; }

  const Message& message() const noexcept { return out_; }
  std::span<const uint8_t> bytes() const noexcept { return out_.packet(); }
  /// What parse() found, after a normalize() that returned Malformed.
  Error parse_error() const noexcept { return parse_error_; }

  /// Sets the TTL of message().records()[i] in the written bytes and in the view (the
  /// replay gives each record the TTL its model computes). `i` must be below records().size().
  void set_ttl(std::size_t i, uint32_t ttl) noexcept;
  /// Sets or clears the AD bit of message() in the written bytes and in the view: a
  /// validator's verdict (resolver/query/engine_dnssec.cc) on an answer whose AD was cleared.
  void set_ad(bool ad) noexcept;

 private:
  Message raw_;
  Message out_;
  std::vector<uint8_t> buf_;
  Error parse_error_{ParseError::Truncated, 0};
  std::size_t dropped_ = 0;
  std::size_t clamped_ = 0;
  std::size_t blocked_ = 0;
};

}  // namespace hg::wire
