// EventClassifier: the replay's first stage. It gives each trace event's question an index
// and finds where a response's TTLs are, so that the second stage (ReplayEngine::apply,
// engine.h) reads no DNS message twice; pipeline.h runs the two on two threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "cache/key.h"
#include "tools/rehearse/replay/flat_index.h"
#include "tools/rehearse/trace/trace.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::rehearse {

/// One record of a response as the TTL recovery sees it: where its TTL is, and its RRset.
struct RecordTtl {
  uint16_t ttl_offset;
  uint64_t rrset;
};

/// A trace event as the replay's second stage (ReplayEngine::apply) needs it: the question it
/// is about, as an index the first stage (EventClassifier) gives, and for responses the bytes
/// and where their TTLs are. Offsets point into the EventBatch that holds the event.
struct ClassifiedEvent {
  int64_t time_ns = 0;
  int64_t query_time_ns = 0;
  Side side = Side::Client;
  Role role = Role::Query;
  bool undecodable = false;  ///< not DNS, or no question: counted and skipped
  uint16_t id = 0;
  uint32_t q = 0;  ///< the question's index
  /// Responses: equal and nonzero for two responses whose bytes are the same but the ID and
  /// the TTLs (the classifier's memo saw to it); 0 when not known.
  uint64_t content = 0;
  uint32_t message_offset = 0, message_size = 0;  ///< responses only: into EventBatch::bytes
  uint32_t records_offset = 0, records_size = 0;  ///< responses only: into EventBatch::records
};

/// Classified events in trace order, with what they point to. The keys of the questions that
/// first appear in the batch come with it, in the order of their indexes (each the next one).
struct EventBatch {
  std::vector<ClassifiedEvent> events;
  std::vector<uint8_t> bytes;
  std::vector<RecordTtl> records;
  std::vector<cache::CacheKey> new_questions;
  void clear() noexcept {
    events.clear();
    bytes.clear();
    records.clear();
    new_questions.clear();
  }
};

/// The replay's first stage: gives each event's question an index (the same question, the
/// same index, in order of first appearance) and finds where a response's TTLs are. A repeated
/// client query or response (the same bytes but the ID, and for a response the TTLs) skips the
/// parse: a memo by its bytes. It keeps no state the second stage reads, so the two can run
/// on two threads (replay_pipelined).
class EventClassifier {
 public:
  /// Appends `ev` to `out`.
  void classify(const TraceEvent& ev, EventBatch& out);

 private:
  // A response's layout: its bytes and where its TTLs are. Another response with the same
  // bytes but the ID and the TTLs parses the same way (TTLs are not validated), so it takes
  // this layout instead of being parsed.
  struct Layout {
    uint32_t q = 0;
    uint32_t version = 0;  // bumped whenever bytes change
    std::vector<uint8_t> bytes;
    std::vector<RecordTtl> records;
  };
  struct Question {
    cache::CacheKey key;
    uint32_t next = UINT32_MAX;  // the next question whose key has the same hash
  };
  // Client queries seen: a hash of their bytes after the ID → known_, which holds those bytes
  // (in the record itself when they fit, as nearly all queries do: one cache line to read;
  // else in query_arena_) and their question. Bounded: past kMaxKnownQueries new byte
  // strings (or 64 MiB of long ones) are parsed every time.
  struct alignas(64) KnownQuery {
    static constexpr std::size_t kInline = 56;
    uint32_t q;
    uint32_t len;
    union {
      uint8_t bytes[kInline];  // len <= kInline
      std::size_t offset;      // len > kInline: where in query_arena_
    };
  };
  uint32_t intern(const cache::CacheKey& key, EventBatch& out);
  /// The layout remembered for a response like `message`, or nullptr.
  const Layout* known_response(std::span<const uint8_t> message, uint64_t& slot) const;
  /// The question of a client query, remembered by its bytes after the ID. nullopt: the bytes
  /// are new, parse them.
  std::optional<uint32_t> known_query(std::span<const uint8_t> message) const;
  void remember_query(std::span<const uint8_t> message, uint32_t q);

  std::vector<Question> questions_;
  FlatIndex index_;  // key hash → first question with it
  FlatIndex known_index_;
  std::vector<KnownQuery> known_;
  std::vector<uint8_t> query_arena_;
  // Response layouts by a hash of the bytes from the flags to the end of the question.
  FlatIndex layout_index_;
  std::vector<Layout> layouts_;
  std::vector<RecordTtl> records_scratch_;
  wire::Message msg_;
};

/// The identity of an RRset within a question's answers: owner (lowercased), type, class.
/// FNV-1a: these hashes are only compared among one question's few RRsets.
uint64_t rrset_hash(std::span<const uint8_t> owner_wire, wire::RRType type, uint16_t klass);
uint64_t rrset_hash(const wire::Name& owner, wire::RRType type, uint16_t klass);
/// The same for a record of a parsed message; an owner that is a pointer to the question's
/// name (offset 12, nearly every answer record) is hashed without decompressing it.
uint64_t rrset_hash(const wire::Message& m, const wire::RecordView& rr);

/// True when `p` has the bytes of `stored` except the ID and the TTL fields of `records`.
inline bool same_but_id_and_ttls(std::span<const uint8_t> stored, std::span<const uint8_t> p,
                                 std::span<const RecordTtl> records) {
  if (p.size() != stored.size() || p.size() < 12) return false;
  std::size_t from = 2;
  for (const RecordTtl& rr : records) {
    if (std::memcmp(p.data() + from, stored.data() + from, rr.ttl_offset - from) != 0) return false;
    from = rr.ttl_offset + 4u;
  }
  return std::memcmp(p.data() + from, stored.data() + from, p.size() - from) == 0;
}

}  // namespace hg::rehearse
