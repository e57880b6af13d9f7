// Entry: one cached upstream response, stored in wire form, and the hot-path renderer that
// turns it into a response for one particular client.
//
// An Entry is immutable once built and shared (std::shared_ptr<const Entry>): a lookup hands
// the caller a reference that stays valid after the entry is evicted, so the resolver can hold
// a stale answer while it waits for the upstream, and render outside the shard lock.
//
// Layout. The sections are the upstream message's bytes from the end of its question to the
// end of its last record before OPT, byte for byte — compression pointers included:
//
//   upstream:  | header 12 | question Q | answer RRs | authority RRs | additional RRs | OPT |
//                                       ^---------------- sections_ ----------------^
//   rendered:  | header 12 | client's question Q' | sections_ (TTLs patched) | [OPT by caller]
//
//   records()[i] = { end: one past RR i in sections_, ttl_offset: its TTL field in sections_,
//                   ttl: the TTL stored after the TTL policy }
//
// The pointers stay valid because Q' has the same length as Q (same name, only letter case
// may differ) and starts at offset 12, so every byte of sections_ lands at the same offset as
// upstream; truncation only removes records from the end and pointers only point backwards.
// A pointer into Q resolves to the client's own spelling, which is what the client expects.
//
// TTLs count down per record from inserted_at: a CNAME stored with 3600 and its A with 60 each
// render their own remaining time; the entry expires when its shortest TTL does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cache/client_query.h"
#include "cache/clock.h"
#include "cache/key.h"
#include "cache/ttl_policy.h"
#include "wire/message.h"
#include "wire/writer.h"

namespace hg::cache {

/// What kind of answer an entry holds (a stale NXDOMAIN carries EDE 19, a stale positive 3).
enum class AnswerKind : uint8_t { Positive, NxDomain, NoData };

/// Why an upstream response was or was not stored.
enum class InsertOutcome : uint8_t {
  Cached,              ///< stored (replacing any previous copy)
  RemovedZeroTtl,      ///< TTL 0 after the policy: passed through, any cached copy removed
  NotResponse,         ///< QR=0 or opcode not QUERY
  Truncated,           ///< TC=1: the resolver retries over TCP (c-ares does); never cached
  UncacheableRcode,    ///< SERVFAIL, REFUSED, FORMERR, ... (only NOERROR and NXDOMAIN are)
  QuestionMismatch,    ///< not exactly one question, or not the key's name/type/class
  NegativeWithoutSoa,  ///< NXDOMAIN/NODATA with no SOA in authority (RFC 2308 §5)
  TooLarge,            ///< bigger than a shard's whole budget
};
const char* to_string(InsertOutcome o) noexcept;

class Entry {
 public:
  struct Record {
    uint16_t end;         ///< one past the record, relative to sections()
    uint16_t ttl_offset;  ///< the 4-byte TTL field, relative to sections()
    uint32_t ttl;         ///< stored TTL (after the TTL policy), seconds
  };

  /// Builds an entry from a parsed upstream response, or says why it must not be cached.
  /// The checks and TTL rules are those of docs/architecture.md §3 and ttl_policy.h; `response`
  /// must have been parsed by wire::Message::parse (so every offset in it is valid).
  struct Built {
    std::shared_ptr<const Entry> entry;  ///< null unless outcome == Cached
    InsertOutcome outcome;
  };
  /// The entry keeps the response's AD bit only when `keep_ad`: an AD the cache did not see
  /// earned (a trusted upstream, or validation here) is never stored.
  static Built build(const CacheKey& key, const wire::Message& response,
                     const TtlSettings& settings, const TtlCaps& caps, Time now, bool keep_ad);

  /// A copy whose every record expires no later than `cap` seconds after `now` (used when a
  /// ttl-cap is set at run time, so the cache obeys the lowered TTL at once).
  std::shared_ptr<const Entry> with_cap(uint32_t cap, Time now) const;

  // The key this entry answers.
  std::span<const uint8_t> qname_wire() const noexcept { return {bytes(), qname_len_}; }
  wire::Name qname() const noexcept;
  wire::RRType qtype() const noexcept { return qtype_; }
  uint16_t qclass() const noexcept { return qclass_; }
  bool dnssec_ok() const noexcept { return dnssec_ok_; }
  bool checking_disabled() const noexcept { return checking_disabled_; }
  uint64_t key_hash() const noexcept { return hash_; }
  bool matches(const CacheKey& key) const noexcept;

  AnswerKind kind() const noexcept { return kind_; }
  uint8_t rcode() const noexcept { return rcode_; }
  bool authentic_data() const noexcept { return ad_; }
  uint16_t ancount() const noexcept { return ancount_; }
  uint16_t nscount() const noexcept { return nscount_; }
  uint16_t arcount() const noexcept { return arcount_; }
  /// Length of the question (qname + 4): a client question must have exactly this length.
  std::size_t question_size() const noexcept { return std::size_t{qname_len_} + 4; }
  std::span<const uint8_t> sections() const noexcept {
    return {bytes() + qname_len_, bytes_len_ - qname_len_};
  }
  std::span<const Record> records() const noexcept { return {buf_, record_count_}; }

  Time inserted_at() const noexcept { return inserted_at_; }
  /// When the shortest stored TTL runs out: fresh strictly before, stale from then on.
  Time expires_at() const noexcept { return expires_at_; }
  /// The shortest stored TTL, seconds.
  uint32_t ttl() const noexcept { return ttl_; }
  /// Record i's TTL at `now`: stored TTL minus whole seconds since insert, never below 0.
  uint32_t remaining_ttl(std::size_t i, Time now) const noexcept;

  /// Bytes this entry occupies on the heap (object, blob, record table, control block,
  /// allocator headers): what the cache charges against cache-size, with its index overhead.
  std::size_t memory_bytes() const noexcept;

  /// A complete message (ID 0, QR, RA, lowercased question, no OPT) with TTLs as at `now`:
  /// for dumps and tests, not for the hot path.
  std::vector<uint8_t> to_wire(Time now) const;

  /// Claims the one background refresh this entry may trigger; true for the first caller only.
  /// Reads before it claims: once claimed, later hits in the window only read the flag's line.
  bool try_claim_prefetch() const noexcept {
    return !prefetch_claimed_.load(std::memory_order_relaxed) &&
           !prefetch_claimed_.exchange(true, std::memory_order_relaxed);
  }

  // Entries are made only by build() and with_cap(), through make(): the constructors take a
  // key only Entry can create (std::allocate_shared needs them public).
  struct Storage {
    explicit Storage() = default;
  };
  explicit Entry(Storage) noexcept {}
  /// `other`'s fields, without its records and bytes (make() gives the copy its own).
  Entry(Storage, const Entry& other) noexcept;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

 private:
  // One allocation holds the shared_ptr control block, this object, and behind it the record
  // table and the bytes:
  //   | control block | Entry | Record × record_count_ | qname (lowercased) | sections | pad |
  // buf_ points at the table (Record-typed, so it is aligned; the bytes are read as uint8_t).
  // One malloc and one free per entry instead of two, and one chunk header less.
  static std::shared_ptr<Entry> make(std::size_t records, std::size_t bytes, const Entry* like);
  const uint8_t* bytes() const noexcept {
    return reinterpret_cast<const uint8_t*>(buf_ + record_count_);
  }
  uint8_t* bytes_mut() noexcept { return reinterpret_cast<uint8_t*>(buf_ + record_count_); }
  std::size_t buf_records() const noexcept {
    return record_count_ + (bytes_len_ + sizeof(Record) - 1) / sizeof(Record);
  }

  Record* buf_ = nullptr;  // in the same allocation, after this object (see make())
  Time inserted_at_{};
  Time expires_at_{};
  uint64_t hash_ = 0;
  uint32_t ttl_ = 0;
  uint32_t bytes_len_ = 0;     // qname + sections
  uint16_t record_count_ = 0;  // a message of at most 65535 bytes holds fewer records
  wire::RRType qtype_ = wire::RRType::A;
  uint16_t qclass_ = 1;
  uint16_t ancount_ = 0;
  uint16_t nscount_ = 0;
  uint16_t arcount_ = 0;
  uint8_t qname_len_ = 0;
  uint8_t rcode_ = 0;
  AnswerKind kind_ = AnswerKind::Positive;
  bool ad_ = false;
  bool dnssec_ok_ = false;
  bool checking_disabled_ = false;
  mutable std::atomic<bool> prefetch_claimed_{false};
};

struct RenderResult {
  bool ok = false;         ///< false: the question length differs, the writer was not empty,
                           ///< or not even header + question + reserve fit
  bool truncated = false;  ///< TC=1 was set (records the client needs were dropped)
  uint16_t ancount = 0;
  uint16_t nscount = 0;
  uint16_t arcount = 0;  ///< records written to the additional section (no OPT yet)
};

/// Renders `entry` for `client` into the empty writer `out`. The hot path: it copies the
/// stored bytes, patches the header and every TTL, and allocates nothing.
///
/// - Header: the client's ID, RD and CD; QR=1, RA=1, AA=0; AD only when the upstream set it
///   and the client sent DO or AD (RFC 6840 §5.8); the stored RCODE.
/// - TTLs: fresh (`stale_ttl` empty): each record's remaining TTL at `now`; stale: each
///   record's min(*stale_ttl, stored TTL) (RFC 8767 §4, never above the original).
/// - Size: everything is kept within out.limit() - `reserve`, where `reserve` is what the
///   caller will append (the OPT record and any EDE option; 0 without EDNS). Records are
///   dropped from the end, at a record boundary. TC=1 only when data the client needs went
///   (RFC 2181 §9): an answer record for a positive answer (its authority NS records are
///   optional); an answer or authority record (the SOA, RFC 2308 §5) for NXDOMAIN/NODATA.
///   Dropping only additional records never sets TC.
/// Afterwards the writer sits at the end of the message: the caller may append the OPT
/// record (wire::append_opt also bumps ARCOUNT) or anything else within `reserve`.
RenderResult render_entry(const Entry& entry, const ClientQuery& client, Time now,
                          std::optional<uint32_t> stale_ttl, wire::WireWriter& out,
                          std::size_t reserve = 0) noexcept;

}  // namespace hg::cache
