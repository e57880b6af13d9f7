// libFuzzer target for every wire/ parser entry point (docs/architecture.md §7: every parser entry
// point has a libFuzzer target): Message::parse (Strict and Lenient), read_rdata via to_owned, the
// printer, write_message, and Name::from_text.
//
// Properties checked, each a crash (abort) when violated:
//  1. Strict acceptance implies Lenient acceptance; a Strict-only failure is TrailingBytes.
//  2. A parsed message always converts to the owned model (parse validated every RDATA).
//  3. What write_message() writes parses again in Strict mode, and gives back the same message:
//     the same header id/flags, questions, records (names with their letter case) and EDNS —
//     minus the records it had to drop, with TC set exactly when it says it truncated.
//  4. Printing the rewritten message gives the same text as printing the original.
//  5. Name text round trip: from_text(to_text(n)) is identical to n.
//  6. rewrite_without_opt() writes the same bytes, with the same outcome, as write_message() of
//     the owned model with its EDNS removed — with room for everything and within 512 bytes;
//     and the view it builds of its output is what parsing that output (Strict) gives.
//  7. AnswerNormalizer (the one normaliser of untrusted answers before a cache insert: the
//     daemon's, the cache file's, the replay's) refuses as Malformed exactly what a Lenient
//     parse refuses, with the same error; otherwise it gives Ok with rewrite_without_opt()'s
//     bytes and view, or TooLarge exactly when those would not fit whole in 65,535 bytes.
//  8. With every RewriteRules rule on, an Ok answer holds no RRSIG, NSEC or NSEC3 record but
//     of the question's type, no TTL of 2^31 or more and no AD, and its bytes parse (Strict)
//     to the view given; a second normalize of those bytes keeps every record (the question's
//     chain of a scrubbed answer is all of it).
//
// Built with -fsanitize=fuzzer,address,undefined when HG_FUZZ=ON (clang); otherwise the same
// file is linked with replay_main.cc and ctest replays tests/fuzz/corpus/message/.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "wire/message.h"
#include "wire/name.h"
#include "wire/owned.h"
#include "wire/print.h"
#include "wire/reencode.h"

namespace {

using namespace hg::wire;

using hg::fuzz::check;

void check_name_text(std::span<const uint8_t> data) {
  if (data.size() > 1024) return;
  std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  auto n = Name::from_text(text);
  if (!n) return;
  auto again = Name::from_text(n->to_text());
  check(again.has_value(), "Name::from_text(to_text(n)) failed");
  check(again->identical(*n), "Name text round trip changed the name");
  check(again->lowercased() == *n && n->is_subdomain_of(n->parent(n->label_count())),
        "Name lowercase/root properties");
}

bool same_view(const Message& a, const Message& b) {
  const auto same_q = [](const Question& x, const Question& y) {
    return x.name.identical(y.name) && x.type == y.type && x.klass == y.klass &&
           x.offset == y.offset && x.end == y.end;
  };
  const auto same_rr = [](const RecordView& x, const RecordView& y) {
    return x.offset == y.offset && x.ttl_offset == y.ttl_offset &&
           x.rdata_offset == y.rdata_offset && x.rdlength == y.rdlength && x.type == y.type &&
           x.klass == y.klass && x.ttl == y.ttl && x.section == y.section;
  };
  const Header &ha = a.header(), &hb = b.header();
  return std::ranges::equal(a.packet(), b.packet()) && ha.id == hb.id && ha.flags == hb.flags &&
         ha.qdcount == hb.qdcount && ha.ancount == hb.ancount && ha.nscount == hb.nscount &&
         ha.arcount == hb.arcount && !a.edns() && !b.edns() &&
         std::ranges::equal(a.questions(), b.questions(), same_q) &&
         std::ranges::equal(a.section(Section::Answer), b.section(Section::Answer), same_rr) &&
         std::ranges::equal(a.section(Section::Authority), b.section(Section::Authority),
                            same_rr) &&
         std::ranges::equal(a.section(Section::Additional), b.section(Section::Additional),
                            same_rr);
}

void check_rewrite(const Message& m, const OwnedMessage& owned) {
  OwnedMessage no_opt = owned;
  no_opt.edns.reset();
  for (const std::size_t limit : {std::size_t{65535}, std::size_t{512}}) {
    std::vector<uint8_t> a(limit), b(limit);
    WireWriter wa(a), wb(b);
    const auto oa = write_message(wa, no_opt);
    Message view;
    const auto ob = rewrite_without_opt(wb, m, &view);
    check(oa.ok == ob.ok && oa.truncated == ob.truncated && oa.records == ob.records,
          "rewrite_without_opt outcome differs from write_message");
    check(!oa.ok || std::ranges::equal(wa.written(), wb.written()),
          "rewrite_without_opt bytes differ from write_message");
    if (!ob.ok) continue;
    Message parsed;
    check(parsed.parse(wb.written(), ParseMode::Strict).has_value(),
          "rewrite_without_opt output does not parse (Strict)");
    check(same_view(view, parsed), "rewrite_without_opt view differs from parsing its output");
  }
}

void check_normalizer(std::span<const uint8_t> data) {
  static AnswerNormalizer n;  // reused across inputs, as its holders reuse it
  const NormalizeStatus st = n.normalize(data);
  Message m;
  const auto parsed = m.parse(data, ParseMode::Lenient);
  if (data.size() > 65535) {
    check(st == NormalizeStatus::TooLarge, "normalizer took an answer over 65535 bytes");
    return;
  }
  if (!parsed) {
    check(st == NormalizeStatus::Malformed && n.parse_error() == parsed.error(),
          "normalizer status differs from a Lenient parse's error");
    return;
  }
  std::vector<uint8_t> buf(65535);
  WireWriter w(buf);
  Message view;
  const auto out = rewrite_without_opt(w, m, &view);
  const bool whole = out.ok && !out.truncated;
  check(st == (whole ? NormalizeStatus::Ok : NormalizeStatus::TooLarge),
        "normalizer status differs from rewrite_without_opt's outcome");
  if (whole) {
    check(std::ranges::equal(n.bytes(), w.written()), "normalizer bytes differ");
    check(n.message().records().size() == view.records().size() &&
              n.message().questions().size() == view.questions().size(),
          "normalizer view differs");
  } else {
    check(n.message().records().empty() && n.bytes().empty(), "a refusal left a message");
  }
}

void check_scrubbed(std::span<const uint8_t> data) {
  static AnswerNormalizer n;
  const RewriteRules all{
      .strip_dnssec = true, .clamp_ttl = true, .clear_ad = true, .chain_only = true};
  if (n.normalize(data, all) != NormalizeStatus::Ok) return;
  const Message& m = n.message();
  check(!m.header().ad(), "AD survived clear_ad");
  const auto qs = m.questions();
  for (const RecordView& rr : m.records()) {
    check((rr.ttl & 0x80000000u) == 0, "a TTL of 2^31 or more survived clamp_ttl");
    check(!is_dnssec_proof_type(rr.type) || (!qs.empty() && qs.front().type == rr.type),
          "a DNSSEC record survived strip_dnssec");
  }
  Message again;
  check(again.parse(n.bytes(), ParseMode::Strict).has_value() &&
            again.records().size() == m.records().size() && again.header().ad() == false,
        "scrubbed bytes differ from their view");
  static AnswerNormalizer again_n;
  const std::vector<uint8_t> scrubbed(n.bytes().begin(), n.bytes().end());
  check(again_n.normalize(scrubbed, all) == NormalizeStatus::Ok && again_n.dropped() == 0,
        "scrubbing a scrubbed answer left out more records");
}

void check_message(std::span<const uint8_t> data) {
  Message strict, lenient;
  const auto s = strict.parse(data, ParseMode::Strict);
  const auto l = lenient.parse(data, ParseMode::Lenient);
  if (s) check(l.has_value(), "Strict accepted what Lenient rejected");
  if (!s && l) check(s.error().code == ParseError::TrailingBytes, "Strict-only failure");
  if (!l) return;

  const std::string text = print_message(lenient);
  auto owned = to_owned(lenient);
  check(owned.has_value(), "to_owned failed on a parsed message");
  check_rewrite(lenient, *owned);

  std::vector<uint8_t> buf(65535);
  WireWriter w(buf);
  const auto out = write_message(w, *owned);
  // Decompressed questions can outgrow 64 KiB only in contrived packets; nothing to compare.
  if (!out.ok) return;

  Message again;
  const auto st = again.parse(w.written(), ParseMode::Strict);
  check(st.has_value(), "our own output does not parse (Strict)");
  auto owned2 = to_owned(again);
  check(owned2.has_value(), "to_owned failed on our own output");

  // Build what we expect back: the records that fit, TC set if answer/authority were cut.
  OwnedMessage expected = std::move(*owned);
  std::size_t keep = out.records;
  for (auto* sec : {&expected.answer, &expected.authority, &expected.additional}) {
    const std::size_t k = keep < sec->size() ? keep : sec->size();
    sec->resize(k);
    keep -= k;
  }
  if (out.truncated) expected.header.set(flag::TC, true);
  expected.header.qdcount = owned2->header.qdcount;
  expected.header.ancount = owned2->header.ancount;
  expected.header.nscount = owned2->header.nscount;
  expected.header.arcount = owned2->header.arcount;
  check(identical(expected, *owned2), "rewritten message differs from the original");
  if (!out.truncated && out.records == lenient.records().size()) {
    check(print_message(again) == text, "printed text differs after the round trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> in(data, size);
  check_message(in);
  check_normalizer(in);
  check_scrubbed(in);
  check_name_text(in);
  return 0;
}
