// Fuzz target: what a DoT server sends us (resolver/upstream/dot.h). The bytes after the first are
// a TLS stream's plaintext, cut into chunks whose sizes the first byte picks, fed through
// dot::StreamReader: every message it yields must be at least a DNS header long and the
// messages, framed again, must be exactly the stream's start; a stream it calls broken must
// hold a length under 12 right where it stopped. The same bytes as a query go through
// dot::pad_query, whose result must be unchanged or a multiple of 128 that still ends in the
// padding option it wrote.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "resolver/upstream/dot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hg::resolver;
  if (size < 1) return 0;
  const std::size_t chunk = 1 + data[0] % 64;
  const std::span<const uint8_t> stream(data + 1, size - 1);

  dot::StreamReader r;
  std::vector<uint8_t> again;
  for (std::size_t at = 0; at < stream.size(); at += chunk) {
    r.feed(stream.subspan(at, std::min(chunk, stream.size() - at)));
    while (auto m = r.next()) {
      if (m->size() < 12 || m->size() > 65535) std::abort();
      again.push_back(static_cast<uint8_t>(m->size() >> 8));
      again.push_back(static_cast<uint8_t>(m->size()));
      again.insert(again.end(), m->begin(), m->end());
    }
    if (r.buffered() > 65537 + chunk) std::abort();  // one partial message at most
  }
  if (again.size() > stream.size() || !std::equal(again.begin(), again.end(), stream.begin()))
    std::abort();
  if (r.broken()) {
    const std::size_t at = again.size();
    if (at + 2 > stream.size() || (hg::base::load_u16(&stream[at])) >= 12) std::abort();
  } else if (stream.size() - again.size() != r.buffered()) {
    std::abort();
  }

  std::vector<uint8_t> q(stream.begin(), stream.end());
  const std::size_t len = q.size();
  q.resize(len + 4 + 127);
  const std::size_t out = dot::pad_query(q, len);
  if (out != len) {
    if (out % 128 != 0 || out < len + 4 || out >= len + 4 + 128) std::abort();
    if ((hg::base::load_u16(&q[len])) != 12) std::abort();
    if (static_cast<std::size_t>(hg::base::load_u16(&q[len + 2])) != out - len - 4) std::abort();
  }
  return 0;
}
