// Fuzz target: a length-prefixed DNS stream as a TCP client or a DoT server sends it
// (resolver/net/stream_framer.h, dot::stream_reader() in resolver/upstream/dot.h). The first
// byte picks the chunk size the stream is cut into (1..64) and, by its top bit, DoT's limits
// (a length under 12 breaks the stream) or TCP's (none); the rest is the stream, read through
// write_area()/commit() as the listeners read a socket. Every message the framer yields must
// be within the limits, the messages framed again must be exactly the stream's start, at most
// one message's worth is ever held, and a stream it calls broken must hold a length out of
// range right where it stopped. The same bytes as a query go through dot::pad_query, whose
// result must be unchanged or a multiple of 128 that still ends in the padding option it
// wrote.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "resolver/net/stream_framer.h"
#include "resolver/upstream/dot.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hg::resolver;
  using hg::fuzz::check;
  if (size < 1) return 0;
  const std::size_t chunk = 1 + data[0] % 64;
  const bool dot = (data[0] & 0x80) != 0;
  const std::size_t min_length = dot ? 12 : 0;
  const std::span<const uint8_t> stream(data + 1, size - 1);

  StreamFramer r = dot ? dot::stream_reader() : StreamFramer();
  std::vector<uint8_t> again;
  std::size_t at = 0;
  while (at < stream.size()) {
    const std::span<uint8_t> area = r.write_area(std::min(chunk, stream.size() - at));
    if (area.empty()) break;
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), area.size(), area.begin());
    r.commit(area.size());
    at += area.size();
    while (auto m = r.next()) {
      check(m->size() >= min_length && m->size() <= 65535, "a message within the limits");
      check(StreamFramer::append_framed(again, *m), "a message a prefix can say");
    }
    check(r.buffered() <= 2 + 65535, "one message held at most");
  }
  check(again.size() <= stream.size() && std::equal(again.begin(), again.end(), stream.begin()),
        "the messages are the stream's start, in order");
  if (r.broken()) {
    const std::size_t p = again.size();
    check(p + 2 <= stream.size() && hg::base::load_u16(&stream[p]) < min_length,
          "a broken stream stopped at a length out of range");
  } else {
    check(at == stream.size(), "an unbroken stream is read to its end");
    check(stream.size() - again.size() == r.buffered(), "the rest is held");
  }

  std::vector<uint8_t> q(stream.begin(), stream.end());
  const std::size_t len = q.size();
  q.resize(len + 4 + 127);
  const std::size_t out = dot::pad_query(q, len);
  if (out != len) {
    check(out % 128 == 0 && out >= len + 4 && out < len + 4 + 128, "padded to a block");
    check(hg::base::load_u16(&q[len]) == 12, "the Padding option's code");
    check(hg::base::load_u16(&q[len + 2]) == out - len - 4, "the Padding option's length");
  }
  return 0;
}
