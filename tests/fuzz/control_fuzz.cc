// libFuzzer target for the control socket's request parser: Control::execute on any line,
// against a small real cache that the earlier lines of the same input filled, flushed and
// capped (the input is split into lines at '\n', as the socket does).
//
// Properties checked, each an abort when violated:
//  1. every reply is non-empty lines only (an empty line would end the reply early on the
//     socket and desynchronise the client), chunked parts included;
//  2. a chunked reply (dump) ends: at most a bounded number of chunks for this small cache.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "resolver/control.h"
#include "resolver/server.h"
#include "tests/wire/packet_builder.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using namespace hg;

resolver::Config make_config() {
  resolver::Config c;
  c.cache_size = 1 << 18;
  return c;
}

void check_lines(std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) std::abort();  // every reply line ends with '\n'
    if (nl == start) std::abort();                   // an empty line inside a reply
    start = nl + 1;
  }
}

// A few cached answers, so that dump, flush and ttl-cap have entries to work on.
void seed(resolver::Shared& shared, resolver::MonoTime now) {
  for (const char* name : {"www.example.com", "a.b.example.com", "example.org"}) {
    wire::test::PacketBuilder b;
    b.id(7).flags(0x8180).question(name, 1).rr(0, name, 1, 300, wire::test::Bytes{192, 0, 2, 1});
    const auto packet = b.build();
    wire::Message m;
    if (!m.parse(packet, wire::ParseMode::Strict)) std::abort();
    const auto key = cache::CacheKey::make(wire::Name::from_text(name).value(), wire::RRType::A, 1,
                                           false, false);
    shared.cache.insert(key, m, now);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const resolver::MonoTime now{resolver::Millis{50'000'000}};
  static resolver::Shared shared(make_config());
  static bool seeded = false;
  if (!seeded) {
    seed(shared, now);
    seeded = true;
  }
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (start <= input.size()) {
    std::size_t nl = input.find('\n', start);
    if (nl == std::string_view::npos) nl = input.size();
    std::string_view line = input.substr(start, nl - start);
    if (line.size() > resolver::Control::kMaxLine)
      line = line.substr(0, resolver::Control::kMaxLine);
    auto out = resolver::Control::execute(shared, line, now);
    check_lines(out.text);
    if (out.more) {
      std::string chunk;
      int chunks = 0;
      while (true) {
        chunk.clear();
        const bool again = out.more(chunk);
        check_lines(chunk);
        if (!again) break;
        if (++chunks > 100000) std::abort();
      }
    }
    start = nl + 1;
  }
  return 0;
}
