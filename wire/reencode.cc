#include "wire/reencode.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <variant>

#include "base/bytes.h"
#include "wire/rdata.h"

namespace hg::wire {

// Fills a Message's private fields for rewrite_without_opt (a friend of Message).
struct MessageViewBuilder {
  static void start(Message& v) {
    v.questions_.clear();
    v.records_.clear();
    v.edns_.reset();
    v.section_end_[0] = v.section_end_[1] = v.section_end_[2] = 0;
    v.packet_ = {};
  }
  static void question(Message& v, const Question& q) { v.questions_.push_back(q); }
  static void record(Message& v, const RecordView& rr) { v.records_.push_back(rr); }
  static void end_section(Message& v, int s) { v.section_end_[s] = v.records_.size(); }
  static RecordView& record_at(Message& v, std::size_t i) { return v.records_[i]; }
  static Header& header(Message& v) { return v.header_; }
  static void finish(Message& v, const Header& h, std::span<const uint8_t> packet) {
    v.header_ = h;
    v.packet_ = packet;
  }
};

namespace {

// True when the record's owner is a pointer to the first question's name (the usual case)
// and the writer would answer it with a pointer to the question it wrote: the question was
// the first name written, literally, at offset 12 of an empty writer, so it is the writer's
// first compression target and the full-name match it finds first. (A root question name
// gives no target: it is written literally again.)
bool owner_is_question(std::size_t base, const Message& m, const RecordView& rr) {
  const auto p = m.packet();
  const auto qs = m.questions();
  return base == 0 && !qs.empty() && qs.front().offset == kHeaderSize &&
         qs.front().name.size() > 1 && rr.offset + 1u < p.size() && p[rr.offset] == 0xC0 &&
         p[rr.offset + 1] == kHeaderSize;
}

// One record; rolls back and returns false when it does not fit or its RDATA does not decode.
// On success, `out` describes the record as written (offsets relative to `base`).
bool rewrite_record(WireWriter& w, std::size_t base, const Message& m, const RecordView& rr,
                    uint32_t ttl, bool& bad_rdata, RecordView& out) {
  const std::size_t mark = w.mark();
  bool ok = false;
  if (owner_is_question(base, m, rr)) {
    ok = w.u16(static_cast<uint16_t>(0xC000 | kHeaderSize));
  } else {
    ok = w.name(m.owner(rr));
  }
  ok = ok && w.u16(static_cast<uint16_t>(rr.type)) && w.u16(rr.klass);
  const std::size_t ttl_at = w.mark();
  ok = ok && w.u32(ttl);
  const std::size_t rdata_at = w.mark() + 2;
  if (ok) {
    if (rdata_has_names(rr.type)) {
      auto rd = read_rdata(m, rr);
      if (!rd) {
        bad_rdata = true;
        ok = false;
      } else {
        ok = write_rdata_with_length(w, rr.type, *rd);
      }
    } else {
      // A, AAAA, TXT, CAA and opaque types: parse() validated exactly what read_rdata() checks,
      // and write_rdata() writes those bytes back unchanged.
      ok = w.u16(rr.rdlength) && w.bytes(m.packet().subspan(rr.rdata_offset, rr.rdlength));
    }
  }
  if (!ok) {
    w.rollback(mark);
    return false;
  }
  out = rr;
  out.ttl = ttl;
  out.offset = static_cast<uint16_t>(mark - base);
  out.ttl_offset = static_cast<uint16_t>(ttl_at - base);
  out.rdata_offset = static_cast<uint16_t>(rdata_at - base);
  out.rdlength = static_cast<uint16_t>(w.mark() - rdata_at);
  return true;
}

}  // namespace

namespace {

constexpr std::size_t kMaxChain = 16;

bool in(const std::vector<Name>& names, const Name& n) noexcept {
  return std::any_of(names.begin(), names.end(), [&](const Name& x) { return x == n; });
}

// True when some name of `names` is `zone` or lies below it.
bool covers(const Name& zone, const std::vector<Name>& names) noexcept {
  return std::any_of(names.begin(), names.end(),
                     [&](const Name& x) { return x.is_subdomain_of(zone); });
}

// The name in a decoded NS, CNAME, DNAME, MX or SRV record's RDATA.
std::optional<Name> target_of(const Message& m, const RecordView& rr) {
  if (rr.type != RRType::NS && rr.type != RRType::CNAME && rr.type != RRType::DNAME &&
      rr.type != RRType::MX && rr.type != RRType::SRV)
    return std::nullopt;
  auto rd = read_rdata(m, rr);
  if (!rd) return std::nullopt;
  if (const auto* n = std::get_if<RdataName>(&*rd)) return n->name;
  if (const auto* mx = std::get_if<RdataMX>(&*rd)) return mx->exchange;
  if (const auto* srv = std::get_if<RdataSRV>(&*rd)) return srv->target;
  return std::nullopt;
}

}  // namespace

void chain_records(const Message& m, std::vector<uint8_t>& keep) {
  const auto records = m.records();
  keep.assign(records.size(), 0);
  if (m.questions().empty()) return;
  // Thread-local scratch: the daemon's miss path allocates nothing once these have grown.
  thread_local std::vector<Name> owners, chain, zones, targets;
  owners.clear();
  for (const RecordView& rr : records)
    owners.push_back(m.owner(rr));  // decompressed once, read by every pass below
  chain.assign(1, m.questions().front().name);
  zones.clear();
  targets.clear();
  const std::size_t an = m.section(Section::Answer).size();
  const std::size_t ns = m.section(Section::Authority).size();
  // Answer: follow CNAMEs in whatever order they come (a few passes; each pass that keeps
  // nothing new ends it).
  for (int pass = 0; pass < 4; ++pass) {
    bool grew = false;
    for (std::size_t i = 0; i < an; ++i) {
      if (keep[i] != 0) continue;
      const RecordView& rr = records[i];
      const Name& owner = owners[i];
      // A DNAME redirects the names below its owner; asked for by type, it is the owner's.
      if (rr.type == RRType::DNAME ? covers(owner, chain) : in(chain, owner)) {
        keep[i] = 1;
        grew = true;
        if (rr.type == RRType::CNAME && chain.size() < kMaxChain) {
          if (auto t = target_of(m, rr); t && !in(chain, *t)) chain.push_back(*t);
        }
        if (rr.type == RRType::MX || rr.type == RRType::SRV || rr.type == RRType::NS) {
          if (auto t = target_of(m, rr); t && targets.size() < 64) targets.push_back(*t);
        }
      }
    }
    if (!grew) break;
  }
  // Authority: the zone cut above the chain — the deepest zone offered, so NS records for the
  // root or a TLD beside the real zone's go — and its proofs. The root's NS only for a question
  // about the root itself.
  const bool root_question = m.questions().front().name.is_root();
  auto candidate = [&](const RecordView& rr, const Name& owner) {
    return (rr.type == RRType::SOA || rr.type == RRType::NS || rr.type == RRType::DS) &&
           covers(owner, chain) && (rr.type != RRType::NS || !owner.is_root() || root_question);
  };
  int deepest = -1;
  for (std::size_t i = an; i < an + ns; ++i) {
    if (candidate(records[i], owners[i])) deepest = std::max(deepest, owners[i].label_count());
  }
  for (std::size_t i = an; i < an + ns; ++i) {
    const RecordView& rr = records[i];
    const Name& owner = owners[i];
    if (!candidate(rr, owner) || owner.label_count() != deepest) continue;
    keep[i] = 1;
    if (zones.size() < kMaxChain && !in(zones, owner)) zones.push_back(owner);
    if (rr.type == RRType::NS && targets.size() < 64) {
      if (auto t = target_of(m, rr)) targets.push_back(*t);
    }
  }
  for (std::size_t i = an; i < an + ns; ++i) {
    const RecordView& rr = records[i];
    if (rr.type != RRType::NSEC && rr.type != RRType::NSEC3 && rr.type != RRType::RRSIG) continue;
    const Name& owner = owners[i];
    if (std::any_of(zones.begin(), zones.end(),
                    [&](const Name& z) { return owner.is_subdomain_of(z); }) ||
        covers(owner, chain))
      keep[i] = 1;
  }
  // Additional: addresses of the names the kept records point to.
  for (std::size_t i = an + ns; i < records.size(); ++i) {
    const RecordView& rr = records[i];
    if (rr.type != RRType::A && rr.type != RRType::AAAA && rr.type != RRType::RRSIG) continue;
    if (in(targets, owners[i])) keep[i] = 1;
  }
}

WriteOutcome rewrite_without_opt(WireWriter& w, const Message& m, Message* view,
                                 const RewriteRules& rules) {
  thread_local std::vector<uint8_t> chain_keep;
  if (rules.chain_only) chain_records(m, chain_keep);
  std::size_t index = 0;  // of the record in m.records()
  WriteOutcome out;
  const std::size_t base = w.mark();
  if (view != nullptr) MessageViewBuilder::start(*view);
  const auto questions = m.questions();
  if (questions.size() > 0xFFFF) return out;
  Header h = m.header();
  h.qdcount = static_cast<uint16_t>(questions.size());
  h.ancount = h.nscount = h.arcount = 0;
  if (rules.clear_ad) h.set(flag::AD, false);
  const uint8_t zeros[kHeaderSize] = {};
  if (!w.bytes(zeros)) return out;
  for (const Question& q : questions) {
    const std::size_t at = w.mark();
    if (!w.name(q.name) || !w.u16(static_cast<uint16_t>(q.type)) || !w.u16(q.klass)) {
      w.rollback(base);
      if (view != nullptr) MessageViewBuilder::start(*view);
      return out;
    }
    if (view != nullptr) {
      Question written = q;
      written.offset = static_cast<uint16_t>(at - base);
      written.end = static_cast<uint16_t>(w.mark() - base);
      MessageViewBuilder::question(*view, written);
    }
  }
  uint16_t* counts[3] = {&h.ancount, &h.nscount, &h.arcount};
  bool full = false;
  for (int s = 0; s < 3; ++s) {
    for (const RecordView& rr : m.section(static_cast<Section>(s))) {
      if (full) break;
      const std::size_t i = index++;
      if (rules.chain_only && chain_keep[i] == 0) {
        ++out.dropped;
        continue;
      }
      if (rules.strip_dnssec && is_dnssec_proof_type(rr.type) &&
          (questions.empty() || questions.front().type != rr.type)) {
        ++out.dropped;
        continue;
      }
      if (rules.drop_address != nullptr &&
          ((rr.type == RRType::A && rr.rdlength == 4) ||
           (rr.type == RRType::AAAA && rr.rdlength == 16)) &&
          rules.drop_address(rules.drop_context,
                             m.packet().subspan(rr.rdata_offset, rr.rdlength))) {
        ++out.blocked;
        continue;
      }
      uint32_t ttl = rr.ttl;
      if (rules.clamp_ttl && (ttl & 0x80000000u) != 0) {
        ttl = 0;
        ++out.clamped;
      }
      ttl = std::min(ttl, rules.max_ttl);
      bool bad_rdata = false;
      RecordView written{};
      if (*counts[s] == 0xFFFF || !rewrite_record(w, base, m, rr, ttl, bad_rdata, written)) {
        if (bad_rdata) {
          w.rollback(base);
          if (view != nullptr) MessageViewBuilder::start(*view);
          return WriteOutcome{};
        }
        full = true;
        // RFC 2181 §9: leaving out additional data alone does not make an answer truncated.
        if (s < 2) out.truncated = true;
        break;
      }
      ++*counts[s];
      ++out.records;
      if (view != nullptr) MessageViewBuilder::record(*view, written);
    }
    if (view != nullptr) MessageViewBuilder::end_section(*view, s);
  }
  if (out.truncated) h.set(flag::TC, true);
  h.write_unchecked(w.written_mut().data() + base);
  if (view != nullptr) MessageViewBuilder::finish(*view, h, w.written().subspan(base));
  out.ok = true;
  return out;
}

std::string_view to_string(NormalizeStatus s) noexcept {
  switch (s) {
    case NormalizeStatus::Ok:
      return "ok";
    case NormalizeStatus::Malformed:
      return "malformed";
    case NormalizeStatus::TooLarge:
      return "too-large";
  }
  return "unknown";
}

namespace {
constexpr std::size_t kMaxAnswer = 65535;  // a 16-bit TCP length: no DNS message is longer
}  // namespace

AnswerNormalizer::AnswerNormalizer() : buf_(kMaxAnswer) {}

NormalizeStatus AnswerNormalizer::normalize(std::span<const uint8_t> answer,
                                            const RewriteRules& rules) {
  MessageViewBuilder::start(out_);
  dropped_ = clamped_ = blocked_ = 0;
  if (answer.size() > kMaxAnswer) return NormalizeStatus::TooLarge;
  if (auto st = raw_.parse(answer, ParseMode::Lenient); !st) {
    parse_error_ = st.error();
    return NormalizeStatus::Malformed;
  }
  WireWriter w(buf_);
  const WriteOutcome out = rewrite_without_opt(w, raw_, &out_, rules);
  if (out.ok && !out.truncated) {
    dropped_ = out.dropped;
    clamped_ = out.clamped;
    blocked_ = out.blocked;
    return NormalizeStatus::Ok;
  }
  MessageViewBuilder::start(out_);
  // parse() validated every RDATA, so !ok can only mean that not even the questions fit.
  return NormalizeStatus::TooLarge;
}

void AnswerNormalizer::set_ttl(std::size_t i, uint32_t ttl) noexcept {
  assert(i < out_.records().size());
  RecordView& rr = MessageViewBuilder::record_at(out_, i);
  // out_ is a view of buf_, which this object owns and writes.
  base::store_u32(buf_.data() + rr.ttl_offset, ttl);
  rr.ttl = ttl;
}

void AnswerNormalizer::set_ad(bool ad) noexcept {
  if (buf_.size() < kHeaderSize) return;
  Header& h = MessageViewBuilder::header(out_);
  h.set(flag::AD, ad);
  // out_ is a view of buf_: the flags are bytes 2 and 3 of the header (RFC 1035 §4.1.1).
  base::store_u16(buf_.data() + 2, h.flags);
}

}  // namespace hg::wire
