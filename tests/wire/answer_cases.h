// Untrusted answers for the one normaliser (wire::AnswerNormalizer) and its callers' tests:
// one the normaliser takes (pointers where a parser allows them but our writer would not put
// them, an OPT record, bytes after the last record) and the hostile ones it refuses, each with
// the status every caller must see. Built by PacketBuilder, not by the code under test.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/wire/packet_builder.h"
#include "wire/message.h"
#include "wire/reencode.h"

namespace hg::wire::test {

struct AnswerCase {
  std::string name;
  Bytes bytes;
  NormalizeStatus status;
  std::optional<ParseError> parse_error;  ///< when status is Malformed
};

// QR, RD, RA; NOERROR.
inline constexpr uint16_t kAnswerFlags = 0x8180;

/// www.example.com A: a CNAME whose target points into the middle of the question's name
/// ("example.com", offset 16), an A record whose owner points there too, an NS record whose
/// RDATA ends in a pointer; with `opt_and_junk`, an OPT record and junk after the last record
/// (a cache file holds neither: its entries are parsed Strict).
inline Bytes odd_but_valid_answer(bool opt_and_junk = true) {
  // Offsets: header 12, qname 12..28 (www=12, example=16, com=24), qtype/qclass 29..32.
  PacketBuilder b;
  b.id(0x4242).flags(kAnswerFlags).question("www.example.com", 1);
  b.rr_raw_owner(0, {0xC0, 12}, 5, 300, {0xC0, 16});     // www.example.com CNAME example.com
  b.rr_raw_owner(0, {0xC0, 16}, 1, 60, {192, 0, 2, 7});  // example.com A 192.0.2.7
  b.rr(1, "example.com", 2, 3600, cat({{3, 'n', 's', '1'}, {0xC0, 16}}));  // NS ns1.example.com
  if (opt_and_junk) b.opt(1232, 0);  // DO clear: the key of a query without EDNS
  Bytes p = b.build();
  if (opt_and_junk) p.insert(p.end(), {0xDE, 0xAD, 0xBE, 0xEF});  // after the last record
  return p;
}

/// Every case; the first is the valid one.
inline std::vector<AnswerCase> answer_cases() {
  std::vector<AnswerCase> out;
  const Bytes good = odd_but_valid_answer();
  out.push_back({"odd-but-valid", good, NormalizeStatus::Ok, std::nullopt});

  // Cut inside the second record: the counts promise more than is there.
  out.push_back({"truncated", Bytes(good.begin(), good.begin() + 50), NormalizeStatus::Malformed,
                 ParseError::CountMismatch});
  // Cut inside the header.
  out.push_back({"short-header", Bytes(good.begin(), good.begin() + 7), NormalizeStatus::Malformed,
                 ParseError::ShortHeader});

  // A compression pointer forward, past the name it belongs to.
  PacketBuilder fwd;
  fwd.flags(kAnswerFlags).question("www.example.com", 1);
  fwd.rr_raw_owner(0, {0xC0, 60}, 1, 60, {192, 0, 2, 1});
  fwd.raw({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  out.push_back(
      {"pointer-forward", fwd.build(), NormalizeStatus::Malformed, ParseError::PointerNotBackward});
  // A pointer into the header.
  PacketBuilder hdr;
  hdr.flags(kAnswerFlags).question("www.example.com", 1);
  hdr.rr_raw_owner(0, {0xC0, 2}, 1, 60, {192, 0, 2, 1});
  out.push_back({"pointer-into-header", hdr.build(), NormalizeStatus::Malformed,
                 ParseError::PointerIntoHeader});

  // An OPT record in the answer section.
  PacketBuilder opt;
  opt.flags(kAnswerFlags).question("www.example.com", 1);
  opt.rr(0, "www.example.com", 1, 60, {192, 0, 2, 1});
  opt.opt(1232, 0x8000, {}, 0);
  out.push_back({"opt-in-answer", opt.build(), NormalizeStatus::Malformed, ParseError::BadOpt});

  // Over 65,535 bytes: no DNS message is (a parser would read the first 65,535 and ignore the
  // rest as trailing bytes).
  PacketBuilder large;
  large.flags(kAnswerFlags).question("big.example.com", 1);
  large.rr(0, "big.example.com", 1, 60, {192, 0, 2, 9});
  Bytes big = large.build();
  big.resize(65536, 0);
  out.push_back({"oversized-input", big, NormalizeStatus::TooLarge, std::nullopt});

  // 300 SRV records whose target is a pointer to a 253-byte question name: 6 KB as sent, but
  // our writer does not compress an SRV target (RFC 2782), so written again they need 80 KB.
  const std::string qname = long_name({63, 63, 63, 61});
  PacketBuilder grow;
  grow.flags(kAnswerFlags).question(qname, 33);
  for (int i = 0; i < 300; ++i)
    grow.rr_raw_owner(0, {0xC0, 12}, 33, 60, {0, 1, 0, 1, 0, 53, 0xC0, 12});
  out.push_back({"grows-past-64k", grow.build(), NormalizeStatus::TooLarge, std::nullopt});
  return out;
}

}  // namespace hg::wire::test
