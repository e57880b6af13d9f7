// EventClassifier: see classifier.h and docs/rehearsal.md.
#include "tools/rehearse/replay/classifier.h"

#include <functional>
#include <string_view>

#include "base/bytes.h"
#include "base/hash.h"
#include "wire/header.h"

namespace hg::rehearse {
namespace {

// Distinct client query byte strings remembered (known_query), and the longest one.
constexpr std::size_t kMaxKnownQueries = std::size_t{1} << 21;
constexpr std::size_t kMaxKnownQueryBytes = 512;
// The bytes of the known client queries together, at most.
constexpr std::size_t kMaxKnownQueryArena = std::size_t{64} << 20;

}  // namespace

uint64_t rrset_hash(std::span<const uint8_t> owner_wire, wire::RRType type, uint16_t klass) {
  uint64_t h = base::kFnv1aBasis;
  auto mix = [&h](uint8_t b) { h = base::fnv1a_step(h, b); };
  for (uint8_t b : owner_wire)
    mix(wire::ascii_lower(b));
  const auto t = static_cast<uint16_t>(type);
  mix(static_cast<uint8_t>(t >> 8));
  mix(static_cast<uint8_t>(t));
  mix(static_cast<uint8_t>(klass >> 8));
  mix(static_cast<uint8_t>(klass));
  return h;
}

uint64_t rrset_hash(const wire::Name& owner, wire::RRType type, uint16_t klass) {
  return rrset_hash(owner.wire(), type, klass);
}

uint64_t rrset_hash(const wire::Message& m, const wire::RecordView& rr) {
  const auto p = m.packet();
  if (rr.offset + 1u < p.size() && p[rr.offset] == 0xC0 && p[rr.offset + 1] == 12 &&
      !m.questions().empty())
    return rrset_hash(m.questions().front().name.wire(), rr.type, rr.klass);
  return rrset_hash(m.owner(rr), rr.type, rr.klass);
}

uint32_t EventClassifier::intern(const cache::CacheKey& key, EventBatch& out) {
  // index_ holds the first question of each hash; equal hashes (2^-64 per pair) chain by next.
  const auto id = static_cast<uint32_t>(questions_.size());
  auto [first, fresh] = index_.try_emplace(key.hash, id);
  if (!fresh) {
    uint32_t i = *first;
    for (;;) {
      if (questions_[i].key == key) return i;
      if (questions_[i].next == UINT32_MAX) break;
      i = questions_[i].next;
    }
    questions_[i].next = id;
  }
  questions_.push_back(Question{key, UINT32_MAX});
  out.new_questions.push_back(key);
  return id;
}

std::optional<uint32_t> EventClassifier::known_query(std::span<const uint8_t> message) const {
  if (message.size() < 12 || message.size() > kMaxKnownQueryBytes) return std::nullopt;
  const std::string_view tail(reinterpret_cast<const char*>(message.data()) + 2,
                              message.size() - 2);
  const uint32_t* k = known_index_.find(std::hash<std::string_view>{}(tail));
  if (k == nullptr) return std::nullopt;
  const KnownQuery& e = known_[*k];
  // Another byte string with the same hash: parsed, as a new one is.
  const uint8_t* bytes = e.len <= KnownQuery::kInline ? e.bytes : query_arena_.data() + e.offset;
  if (e.len != tail.size() || std::memcmp(bytes, tail.data(), e.len) != 0) return std::nullopt;
  return e.q;
}

void EventClassifier::remember_query(std::span<const uint8_t> message, uint32_t q) {
  if (message.size() < 12 || message.size() > kMaxKnownQueryBytes ||
      known_.size() >= kMaxKnownQueries || query_arena_.size() >= kMaxKnownQueryArena)
    return;
  const std::string_view tail(reinterpret_cast<const char*>(message.data()) + 2,
                              message.size() - 2);
  const auto [k, fresh] = known_index_.try_emplace(std::hash<std::string_view>{}(tail),
                                                   static_cast<uint32_t>(known_.size()));
  if (!fresh) return;  // the hash belongs to other bytes: this one stays unremembered
  KnownQuery& e = known_.emplace_back();
  e.q = q;
  e.len = static_cast<uint32_t>(tail.size());
  if (tail.size() <= KnownQuery::kInline) {
    std::memcpy(e.bytes, tail.data(), tail.size());
  } else {
    e.offset = query_arena_.size();
    query_arena_.insert(query_arena_.end(), tail.begin(), tail.end());
  }
}

const EventClassifier::Layout* EventClassifier::known_response(std::span<const uint8_t> message,
                                                               uint64_t& slot) const {
  const std::size_t qend = wire::question_end(message);
  if (qend == 0) {
    slot = 0;
    return nullptr;
  }
  slot = std::hash<std::string_view>{}(
             std::string_view(reinterpret_cast<const char*>(message.data()) + 2, qend - 2)) |
         1;  // 0: not to be remembered
  const uint32_t* at = layout_index_.find(slot);
  if (at == nullptr) return nullptr;
  const Layout& l = layouts_[*at];
  if (!same_but_id_and_ttls(std::span<const uint8_t>(l.bytes), message,
                            std::span<const RecordTtl>(l.records)))
    return nullptr;
  return &l;
}

void EventClassifier::classify(const TraceEvent& ev, EventBatch& out) {
  ClassifiedEvent& c = out.events.emplace_back();
  c.time_ns = ev.time_ns;
  c.query_time_ns = ev.query_time_ns;
  c.side = ev.side;
  c.role = ev.role;
  // A client query only needs its question; the same bytes (but the ID) give the same one.
  if (ev.side == Side::Client && ev.role == Role::Query) {
    if (const auto known = known_query(ev.message)) {
      c.q = *known;
      return;
    }
  }
  uint64_t slot = 0;
  const Layout* layout = nullptr;
  if (ev.role == Role::Response) layout = known_response(ev.message, slot);
  if (layout != nullptr) {
    c.q = layout->q;
    c.id = base::load_u16(&ev.message[0]);
    c.content =
        (uint64_t{static_cast<uint32_t>(layout - layouts_.data())} + 1) << 32 | layout->version;
  } else {
    if (!msg_.parse(ev.message, wire::ParseMode::Lenient) || msg_.questions().empty()) {
      c.undecodable = true;
      return;
    }
    const cache::CacheKey key = cache::CacheKey::from_query(msg_);
    c.q = intern(key, out);
    c.id = msg_.header().id;
    if (ev.side == Side::Client && ev.role == Role::Query) remember_query(ev.message, c.q);
    if (ev.role == Role::Response) {
      records_scratch_.clear();
      for (const wire::RecordView& rr : msg_.records())
        records_scratch_.push_back({rr.ttl_offset, rrset_hash(msg_, rr)});
      if (slot != 0) {
        auto [at, fresh] = layout_index_.try_emplace(slot, static_cast<uint32_t>(layouts_.size()));
        if (fresh) layouts_.emplace_back();
        Layout& l = layouts_[*at];
        l.q = c.q;
        ++l.version;
        l.bytes.assign(ev.message.begin(), ev.message.end());
        l.records = records_scratch_;
        c.content = (uint64_t{*at} + 1) << 32 | l.version;
      }
    }
  }
  if (ev.role != Role::Response) return;
  const std::vector<RecordTtl>& records = layout != nullptr ? layout->records : records_scratch_;
  c.message_offset = static_cast<uint32_t>(out.bytes.size());
  c.message_size = static_cast<uint32_t>(ev.message.size());
  out.bytes.insert(out.bytes.end(), ev.message.begin(), ev.message.end());
  c.records_offset = static_cast<uint32_t>(out.records.size());
  c.records_size = static_cast<uint32_t>(records.size());
  out.records.insert(out.records.end(), records.begin(), records.end());
}

}  // namespace hg::rehearse
