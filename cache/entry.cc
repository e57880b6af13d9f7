// Entry: building a cache entry from an upstream response, and rendering it for a client.
#include "cache/entry.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

#include "base/bytes.h"
#include "wire/header.h"
#include "wire/reader.h"

namespace hg::cache {
namespace {

using wire::RCode;
using wire::RecordView;
using wire::RRType;
using wire::Section;

// What an allocation costs beyond its payload with glibc malloc (chunk header + rounding).
constexpr std::size_t kAllocOverhead = 16;
// A std::allocate_shared control block (vtable pointer + two counters), before the Entry.
constexpr std::size_t kControlBlock = 16;

uint32_t elapsed_seconds(Time inserted_at, Time now) noexcept {
  if (now <= inserted_at) return 0;
  const auto s = std::chrono::duration_cast<Seconds>(now - inserted_at).count();
  return s > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(s);
}

// The MINIMUM field: the last 4 octets of SOA RDATA (RFC 1035 §3.3.13). parse() checked that
// exactly 20 octets follow the two names, so the RDATA is at least 22 octets long.
uint32_t soa_minimum(std::span<const uint8_t> packet, const RecordView& rr) noexcept {
  return base::load_u32(packet.data() + rr.end() - 4);
}

bool is_negative_soa(const RecordView& rr, uint16_t qclass) noexcept {
  return rr.section == Section::Authority && rr.type == RRType::SOA && rr.klass == qclass;
}

}  // namespace

const char* to_string(InsertOutcome o) noexcept {
  switch (o) {
    case InsertOutcome::Cached:
      return "cached";
    case InsertOutcome::RemovedZeroTtl:
      return "zero-ttl";
    case InsertOutcome::NotResponse:
      return "not-response";
    case InsertOutcome::Truncated:
      return "truncated";
    case InsertOutcome::UncacheableRcode:
      return "uncacheable-rcode";
    case InsertOutcome::QuestionMismatch:
      return "question-mismatch";
    case InsertOutcome::NegativeWithoutSoa:
      return "negative-without-soa";
    case InsertOutcome::TooLarge:
      return "too-large";
  }
  return "unknown";
}

Entry::Entry(Storage, const Entry& o) noexcept
    : inserted_at_(o.inserted_at_),
      expires_at_(o.expires_at_),
      hash_(o.hash_),
      ttl_(o.ttl_),
      qtype_(o.qtype_),
      qclass_(o.qclass_),
      ancount_(o.ancount_),
      nscount_(o.nscount_),
      arcount_(o.arcount_),
      qname_len_(o.qname_len_),
      rcode_(o.rcode_),
      kind_(o.kind_),
      ad_(o.ad_),
      dnssec_ok_(o.dnssec_ok_),
      checking_disabled_(o.checking_disabled_) {}

namespace {

// The extra bytes the next TailAllocator allocation carries, and where they begin. Thread
// locals rather than allocator state: std::allocate_shared keeps a copy of the allocator in
// the control block, and an empty one costs nothing there.
thread_local std::size_t tail_bytes = 0;
thread_local void* tail_at = nullptr;

template <class T>
struct TailAllocator {
  using value_type = T;
  TailAllocator() noexcept = default;
  template <class U>
  explicit TailAllocator(const TailAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    constexpr std::size_t kAlign = alignof(std::max_align_t);
    const std::size_t head = (n * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    auto* p = static_cast<unsigned char*>(::operator new(head + tail_bytes));
    tail_at = p + head;
    return reinterpret_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
  template <class U>
  bool operator==(const TailAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace

std::shared_ptr<Entry> Entry::make(std::size_t records, std::size_t bytes, const Entry* like) {
  const std::size_t units = records + (bytes + sizeof(Record) - 1) / sizeof(Record);
  tail_bytes = units * sizeof(Record);
  tail_at = nullptr;
  std::shared_ptr<Entry> e =
      like != nullptr ? std::allocate_shared<Entry>(TailAllocator<Entry>{}, Storage{}, *like)
                      : std::allocate_shared<Entry>(TailAllocator<Entry>{}, Storage{});
  e->buf_ = static_cast<Record*>(tail_at);
  e->record_count_ = static_cast<uint16_t>(records);
  e->bytes_len_ = static_cast<uint32_t>(bytes);
  if (like != nullptr) std::copy_n(like->buf_, like->buf_records(), e->buf_);
  return e;
}

Entry::Built Entry::build(const CacheKey& key, const wire::Message& response,
                          const TtlSettings& settings, const TtlCaps& caps, Time now,
                          bool keep_ad) {
  const wire::Header& h = response.header();
  if (!h.qr() || h.opcode() != wire::Opcode::Query) return {nullptr, InsertOutcome::NotResponse};
  // TC=1: the answer is incomplete by definition; c-ares retries over TCP and we cache that.
  if (h.tc()) return {nullptr, InsertOutcome::Truncated};
  const RCode rcode = response.rcode();
  if (rcode != RCode::NoError && rcode != RCode::NXDomain) {
    return {nullptr, InsertOutcome::UncacheableRcode};
  }
  // An answer to a different question must never be stored under this key (a lesson
  // other resolvers' bug trackers teach). The question must also start at 12 for the stored
  // pointers to work.
  const auto questions = response.questions();
  if (questions.size() != 1) return {nullptr, InsertOutcome::QuestionMismatch};
  const wire::Question& q = questions.front();
  if (q.offset != wire::kHeaderSize || q.type != key.qtype || q.klass != key.qclass ||
      !(q.name == key.qname)) {
    return {nullptr, InsertOutcome::QuestionMismatch};
  }

  // Keep every record before the OPT record. OPT is normally last; if it is not, the records
  // after it are dropped rather than moved, because moving them would break any compression
  // pointer between them.
  const std::span<const uint8_t> packet = response.packet();
  const auto all = response.records();
  std::size_t keep = all.size();
  if (response.edns()) {
    const std::size_t opt_at = response.edns()->record_offset;
    keep = static_cast<std::size_t>(
        std::find_if(all.begin(), all.end(),
                     [&](const RecordView& rr) { return rr.offset > opt_at; }) -
        all.begin());
  }
  const auto kept = all.first(keep);

  AnswerKind kind = AnswerKind::Positive;
  uint16_t an = 0, ns = 0, ar = 0;
  const RecordView* soa = nullptr;
  for (const RecordView& rr : kept) {
    switch (rr.section) {
      case Section::Answer:
        ++an;
        break;
      case Section::Authority:
        ++ns;
        if (soa == nullptr && is_negative_soa(rr, key.qclass)) soa = &rr;
        break;
      case Section::Additional:
        ++ar;
        break;
    }
  }
  if (rcode == RCode::NXDomain) {
    kind = AnswerKind::NxDomain;
  } else if (an == 0) {
    kind = AnswerKind::NoData;
  }
  // RFC 2308 §5: negative answers without an SOA SHOULD NOT be cached (nothing says how long).
  // This also keeps referrals (NOERROR, no answer, NS in authority) out of the cache.
  if (kind != AnswerKind::Positive && soa == nullptr) {
    return {nullptr, InsertOutcome::NegativeWithoutSoa};
  }

  // A negative answer is about the qname, so a cap on the qname's zone bounds all of it (the SOA
  // owner is the zone apex, which may lie above a capped zone).
  std::optional<uint32_t> qname_cap;
  if (kind != AnswerKind::Positive && !caps.empty()) qname_cap = caps.cap_for(key.qname);

  const std::size_t sec_start = q.end;
  const std::size_t sec_end = kept.empty() ? sec_start : kept.back().end();
  const auto qname = key.qname.wire();
  // A parsed message is at most 65535 bytes: the record count fits 16 bits, the offsets too.
  auto e = make(kept.size(), qname.size() + (sec_end - sec_start), nullptr);
  uint8_t* bytes = e->bytes_mut();
  std::memcpy(bytes, qname.data(), qname.size());
  std::memcpy(bytes + qname.size(), packet.data() + sec_start, sec_end - sec_start);
  Record* records = e->buf_;
  uint32_t shortest = UINT32_MAX;
  for (const RecordView& rr : kept) {
    uint32_t ttl = is_negative_soa(rr, key.qclass)
                       ? negative_ttl(rr.ttl, soa_minimum(packet, rr), settings)
                       : positive_ttl(rr.ttl, settings);
    if (!caps.empty()) {
      if (auto cap = caps.cap_for(response.owner(rr)); cap && *cap < ttl) ttl = *cap;
      if (qname_cap && *qname_cap < ttl) ttl = *qname_cap;
    }
    shortest = std::min(shortest, ttl);
    *records++ = Record{static_cast<uint16_t>(rr.end() - sec_start),
                        static_cast<uint16_t>(rr.ttl_offset - sec_start), ttl};
  }
  if (kept.empty()) shortest = 0;  // NOERROR cannot get here with no records; be safe anyway
  // A TTL of 0 means "use once": pass it through, and make sure no older copy lives on as
  // stale data (a lesson from other resolvers' bug trackers).
  if (shortest == 0) return {nullptr, InsertOutcome::RemovedZeroTtl};

  e->inserted_at_ = now;
  e->ttl_ = shortest;
  e->expires_at_ = now + Seconds{shortest};
  e->hash_ = key.hash;
  e->qtype_ = key.qtype;
  e->qclass_ = key.qclass;
  e->dnssec_ok_ = key.dnssec_ok;
  e->checking_disabled_ = key.checking_disabled;
  e->qname_len_ = static_cast<uint8_t>(qname.size());
  e->ancount_ = an;
  e->nscount_ = ns;
  e->arcount_ = ar;
  e->rcode_ = static_cast<uint8_t>(static_cast<uint16_t>(rcode) & 0xF);
  e->kind_ = kind;
  e->ad_ = keep_ad && h.ad();
  return {std::move(e), InsertOutcome::Cached};
}

std::shared_ptr<const Entry> Entry::with_cap(uint32_t cap, Time now) const {
  auto e = make(record_count_, bytes_len_, this);
  const uint64_t limit = uint64_t{elapsed_seconds(inserted_at_, now)} + cap;
  uint32_t shortest = UINT32_MAX;
  for (std::size_t i = 0; i < e->record_count_; ++i) {
    Record& r = e->buf_[i];
    if (r.ttl > limit) r.ttl = static_cast<uint32_t>(limit);
    shortest = std::min(shortest, r.ttl);
  }
  if (e->record_count_ != 0) {
    e->ttl_ = shortest;
    e->expires_at_ = inserted_at_ + Seconds{shortest};
  }
  return e;
}

wire::Name Entry::qname() const noexcept {
  auto n = wire::Name::from_wire(qname_wire());
  return n ? *n : wire::Name{};
}

bool Entry::matches(const CacheKey& key) const noexcept {
  const auto w = key.qname.wire();
  return hash_ == key.hash && qtype_ == key.qtype && qclass_ == key.qclass &&
         dnssec_ok_ == key.dnssec_ok && checking_disabled_ == key.checking_disabled &&
         w.size() == qname_len_ && std::memcmp(w.data(), bytes(), w.size()) == 0;
}

uint32_t Entry::remaining_ttl(std::size_t i, Time now) const noexcept {
  const uint32_t elapsed = elapsed_seconds(inserted_at_, now);
  const uint32_t ttl = buf_[i].ttl;
  return ttl > elapsed ? ttl - elapsed : 0;
}

std::size_t Entry::memory_bytes() const noexcept {
  // make()'s one block: control block and object (rounded as TailAllocator rounds them), the
  // record table with the bytes, and malloc's chunk header and rounding.
  constexpr std::size_t kAlign = alignof(std::max_align_t);
  constexpr std::size_t kHead = (kControlBlock + sizeof(Entry) + kAlign - 1) / kAlign * kAlign;
  return kHead + buf_records() * sizeof(Record) + kAllocOverhead;
}

std::vector<uint8_t> Entry::to_wire(Time now) const {
  std::vector<uint8_t> out(wire::kHeaderSize + question_size() + sections().size());
  wire::Header h;
  h.set(wire::flag::QR, true);
  h.set(wire::flag::RA, true);
  h.set(wire::flag::AD, ad_);
  h.set(wire::flag::CD, checking_disabled_);
  h.set_rcode_low(rcode_);
  h.qdcount = 1;
  h.ancount = ancount_;
  h.nscount = nscount_;
  h.arcount = arcount_;
  h.write_unchecked(out.data());
  uint8_t* p = out.data() + wire::kHeaderSize;
  std::memcpy(p, bytes(), qname_len_);
  base::store_u16(p + qname_len_, static_cast<uint16_t>(qtype_));
  base::store_u16(p + qname_len_ + 2, qclass_);
  p += question_size();
  std::memcpy(p, sections().data(), sections().size());
  for (std::size_t i = 0; i < record_count_; ++i) {
    base::store_u32(p + buf_[i].ttl_offset, remaining_ttl(i, now));
  }
  return out;
}

RenderResult render_entry(const Entry& entry, const ClientQuery& client, Time now,
                          std::optional<uint32_t> stale_ttl, wire::WireWriter& out,
                          std::size_t reserve) noexcept {
  RenderResult r;
  const std::size_t qsize = entry.question_size();
  if (out.size() != 0 || client.question.size() != qsize) return r;
  const std::size_t limit = out.limit() > reserve ? out.limit() - reserve : 0;
  const std::size_t base = wire::kHeaderSize + qsize;
  if (base > limit) return r;

  // How many records fit: all of them usually, else the longest prefix (records end in
  // increasing order, so a binary search over their ends finds the boundary).
  const auto records = entry.records();
  const auto sections = entry.sections();
  std::size_t n = records.size();
  std::size_t body = sections.size();
  if (base + body > limit) {
    const std::size_t room = limit - base;
    auto it = std::upper_bound(records.begin(), records.end(), room,
                               [](std::size_t v, const Entry::Record& rec) { return v < rec.end; });
    n = static_cast<std::size_t>(it - records.begin());
    body = n == 0 ? 0 : records[n - 1].end;
  }
  const std::size_t an_total = entry.ancount();
  const std::size_t ns_total = entry.nscount();
  // RFC 2181 §9: TC only when data the client needs was dropped. A positive answer is
  // complete without its authority records (NS); a negative one needs the SOA (RFC 2308 §5).
  r.truncated = entry.kind() == AnswerKind::Positive ? n < an_total : n < an_total + ns_total;
  if (r.truncated) {
    // A TC answer carries no records: the client asks again over TCP and uses that answer,
    // so records here would only be filler, and a part of an RRset must not be taken for
    // all of it (RFC 2181 §9). Header and question only, as other resolvers send.
    n = 0;
    body = 0;
  }
  r.ancount = static_cast<uint16_t>(std::min(n, an_total));
  r.nscount = static_cast<uint16_t>(std::min(n - r.ancount, ns_total));
  r.arcount = static_cast<uint16_t>(n - r.ancount - r.nscount);

  wire::Header h;
  h.id = client.id;
  const auto query_flags =
      static_cast<uint16_t>(client.flags & (wire::flag::RD | wire::flag::AD | wire::flag::CD));
  const auto stored_flags =
      static_cast<uint16_t>((entry.authentic_data() ? wire::flag::AD : 0) | entry.rcode());
  h.flags = wire::answer_flags(query_flags, client.dnssec_ok, stored_flags);
  h.set(wire::flag::TC, r.truncated);
  h.qdcount = 1;
  h.ancount = r.ancount;
  h.nscount = r.nscount;
  h.arcount = r.arcount;
  std::array<uint8_t, wire::kHeaderSize> header;
  h.write_unchecked(header.data());
  // Fits: base + body <= limit <= out.limit() was established above.
  if (!out.bytes(header) || !out.bytes(client.question) || !out.bytes(sections.first(body))) {
    return RenderResult{};
  }

  uint8_t* sec = out.written_mut().data() + base;
  if (stale_ttl) {
    // RFC 8767 §4: a stale answer carries a short TTL (30 s), but never more than the
    // record's own TTL — a record stored with 10 s must not come back as 30 s.
    for (std::size_t i = 0; i < n; ++i) {
      base::store_u32(sec + records[i].ttl_offset, std::min(*stale_ttl, records[i].ttl));
    }
  } else {
    const uint32_t elapsed = elapsed_seconds(entry.inserted_at(), now);
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t ttl = records[i].ttl;
      base::store_u32(sec + records[i].ttl_offset, ttl > elapsed ? ttl - elapsed : 0);
    }
  }
  r.ok = true;
  return r;
}

}  // namespace hg::cache
