// libFuzzer target for the dnstap frame decoder (dnstap/codec.h), the parser that reads
// untrusted dnstap files.
//
// Properties checked, each an abort when violated:
//  1. decode() returns a status for any input and never reads outside it (ASan).
//  2. Differential: the in-place decode() and the protobuf-c decoder it replaced
//     (tests/dnstap_reference/reference_decoder.h) agree on the status and, when Ok, on every
//     field.
//  3. What decodes re-encodes, and the re-encoded frame decodes to the same message: every
//     field that survived the first decode survives the second, byte for byte.
//  4. The writer's encoder (identity and version pre-encoded as a prefix, the frame measured
//     first) gives the same bytes as encode().
//
// Built with -fsanitize=fuzzer,address,undefined when HG_FUZZ=ON (clang); otherwise linked
// with replay_main.cc and ctest replays tests/fuzz/corpus/dnstap/.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "dnstap/codec.h"
#include "tests/dnstap_reference/reference_decoder.h"

namespace {

using namespace hg::dnstap;

bool same(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::vector<uint8_t>(a.begin(), a.end()) == std::vector<uint8_t>(b.begin(), b.end());
}

void check(bool ok) {
  if (!ok) std::abort();
}

void check_same(const Message& a, const Message& b) {
  check(a.type == b.type && a.family == b.family && a.protocol == b.protocol);
  check(a.query_port == b.query_port && a.response_port == b.response_port);
  check(a.query_time == b.query_time && a.response_time == b.response_time);
  check(same(a.query_address, b.query_address) && same(a.response_address, b.response_address));
  check(same(a.query_message, b.query_message) && same(a.response_message, b.response_message));
  check(same(a.query_zone, b.query_zone) && same(a.identity, b.identity) &&
        same(a.version, b.version));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static ReferenceDecoder reference;
  Message a;
  const DecodeStatus status = decode({data, size}, a);
  Message r;
  check(reference.decode({data, size}, r) == status);
  if (status != DecodeStatus::Ok) return 0;
  check_same(a, r);
  std::vector<uint8_t> frame;
  encode(a, frame);
  check(frame.size() == measure_prefixed(a, encode_prefix(a.identity, a.version).size()).total);
  Message b;
  check(decode(frame, b) == DecodeStatus::Ok);
  check_same(a, b);
  const std::vector<uint8_t> prefix = encode_prefix(a.identity, a.version);
  Message c = a;
  c.identity = {};
  c.version = {};
  const EncodedSize measured = measure_prefixed(c, prefix.size());
  check(measured.total == frame.size());
  std::vector<uint8_t> prefixed(measured.total);
  encode_prefixed(c, measured, prefix, prefixed.data());
  check(prefixed == frame);
  std::vector<uint8_t> once(frame.size());
  check(encode_prefixed(c, prefix, once) == frame.size() && once == frame);
  if (!frame.empty()) check(encode_prefixed(c, prefix, {once.data(), frame.size() - 1}) == 0);
  std::vector<uint8_t> roomy(frame.size() + 512);
  check(encode_prefixed(c, prefix, roomy) == frame.size());
  roomy.resize(frame.size());
  check(roomy == frame);
  return 0;
}
