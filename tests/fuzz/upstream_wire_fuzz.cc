// libFuzzer target for resolver/upstream_wire: the looks the Upstream takes at raw upstream
// datagrams before c-ares does (question match for 0x20, OPT search, RCODE/TC/ID) and the
// 0x20 case writer.
//
// Properties checked, each an abort when violated:
//  1. Nothing reads out of bounds (ASan) or overflows (UBSan), whatever the bytes.
//  2. question_end() of a message is 0 or a position inside it, past the header.
//  3. A message matches its own question Exact; after apply_case() on a copy of the name
//     the copy matches the original CaseOnly or Exact, never Other, and lower-casing both
//     gives the same bytes back.
//  4. find_opt() reports an OPT record only for a message it could walk.
//  5. apply_case() sets each letter of each label to the case its bit says (bit i for byte i
//     of the name, 1 = upper), and nothing else — checked against a plain reference.
//  6. match_question_cased(reply, q, bits) is match_question(reply, q with apply_case(bits)),
//     for the message itself and for its cased copy as the reply.
//
// Built with -fsanitize=fuzzer,address,undefined when HG_FUZZ=ON (clang); otherwise linked
// with replay_main.cc and ctest replays tests/fuzz/corpus/upstream_wire/.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "resolver/upstream/upstream_wire.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/header.h"

namespace {

namespace uw = hg::resolver::upstream_wire;

using hg::fuzz::check;

// The reference for property 5: the letters of the labels, each to the case of its bit.
void reference_case(std::span<uint8_t> name, const uw::CaseBits& bits) {
  std::size_t at = 0;
  while (at < name.size() && at < 256) {
    const uint8_t len = name[at];
    if (len == 0 || len > 63) return;
    for (std::size_t i = at + 1; i <= at + len && i < name.size() && i < 256; ++i) {
      if (!std::isalpha(name[i])) continue;
      const bool upper = (bits[i / 64] >> (i % 64)) & 1;
      name[i] = static_cast<uint8_t>(upper ? std::toupper(name[i]) : std::tolower(name[i]));
    }
    at += 1 + len;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> msg(data, size);
  (void)uw::rcode(msg);
  (void)uw::truncated(msg);
  (void)uw::id(msg);
  const auto opt = uw::find_opt(msg);
  check(!opt.present || opt.valid, "OPT found in a message that could not be walked");

  const std::size_t qend = hg::wire::question_end(msg);
  check(qend == 0 || (qend > uw::kHeaderSize && qend <= size), "question_end out of range");
  if (qend == 0) return 0;
  const auto question = msg.subspan(uw::kHeaderSize, qend - uw::kHeaderSize);
  check(uw::match_question(msg, question) == uw::QuestionMatch::Exact, "self match not Exact");

  // Case bits from the first bytes of the input (any pattern will do).
  uw::CaseBits bits{};
  for (std::size_t i = 0; i < 32 && i < size; ++i)
    bits[i / 8] |= uint64_t{data[i]} << (8 * (i % 8));
  std::vector<uint8_t> copy(msg.begin(), msg.end());
  uw::apply_case(std::span<uint8_t>(copy.data() + uw::kHeaderSize, question.size() - 4), bits);
  std::vector<uint8_t> ref(msg.begin(), msg.end());
  reference_case(std::span<uint8_t>(ref.data() + uw::kHeaderSize, question.size() - 4), bits);
  check(ref == copy, "apply_case differs from the reference");
  const auto cased = std::span<const uint8_t>(copy).subspan(uw::kHeaderSize, question.size());
  check(uw::match_question_cased(msg, question, bits) == uw::match_question(msg, cased),
        "match_question_cased differs on the message");
  check(uw::match_question_cased(copy, question, bits) == uw::match_question(copy, cased),
        "match_question_cased differs on the cased copy");
  const auto m = uw::match_question(copy, question);
  check(m != uw::QuestionMatch::Other, "case change made the question differ otherwise");
  for (std::size_t i = 0; i < size; ++i) {
    const auto a = static_cast<unsigned char>(copy[i]), b = static_cast<unsigned char>(data[i]);
    check(std::tolower(a) == std::tolower(b), "apply_case changed more than letter case");
  }
  return 0;
}
