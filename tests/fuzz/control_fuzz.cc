// libFuzzer target for the control socket's request lines (resolver/ops/control.h): each input is
// one or more lines run through Control::execute_all against a daemon state with a few cached
// CNAME chains — stats, dump, flush, ttl-cap, shadow set/clear/list, drain with --old and
// --flush-old, link and links (resolver/query/links.h; the table fills up to its 64 links across
// inputs). Property: every request gets a reply of complete lines (none only for `links` when
// no link is set), and a reply that starts with "error: " is exactly one line. State persists
// across inputs (zones set, entries flushed), and the cache is refilled when a flush emptied it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "resolver/ops/control.h"
#include "resolver/query/query_engine.h"
#include "wire/owned.h"
#include "wire/rdata.h"

namespace {

using namespace hg;

wire::Name name_of(const char* text) {
  return *wire::Name::from_text(text);
}

void cache_chain(resolver::Shared& s, const char* qname, const char* target, uint8_t last,
                 resolver::MonoTime now) {
  wire::OwnedMessage m;
  m.header.set(wire::flag::QR, true);
  m.questions.push_back({name_of(qname), wire::RRType::A, 1});
  m.answer.push_back(
      {name_of(qname), wire::RRType::CNAME, 1, 3600, wire::RdataName{name_of(target)}});
  m.answer.push_back({name_of(target), wire::RRType::A, 1, 300, wire::RdataA{{192, 0, 2, last}}});
  const auto bytes = wire::to_wire(m);
  wire::Message msg;
  if (!msg.parse(bytes, wire::ParseMode::Strict)) std::abort();
  s.cache.insert(cache::CacheKey::make(name_of(qname), wire::RRType::A, 1, false, false), msg, now);
}

void fill(resolver::Shared& s, resolver::MonoTime now) {
  cache_chain(s, "www.example.com", "lb.example.com", 1, now);
  cache_chain(s, "shop.example.com", "www.example.com", 1, now);
  cache_chain(s, "api.example.org", "lb.example.com", 7, now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static resolver::Shared shared{resolver::Config{}};
  static resolver::MonoTime now{std::chrono::milliseconds{10'000'000}};
  now += std::chrono::milliseconds{size * 997};  // entries age, go stale, expire
  if (shared.cache.stats().entries == 0) fill(shared, now);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (int lines = 0; !in.empty() && lines < 16; ++lines) {
    const std::size_t nl = in.find('\n');
    const std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
    if (line.size() >= resolver::Control::kMaxLine) continue;  // the server refuses those
    const std::string reply = resolver::Control::execute_all(shared, line, now);
    // `links` with no link set is the one reply of no lines.
    const std::size_t first = line.find_first_not_of(" \t");
    const std::string_view cmd =
        first == std::string_view::npos ? std::string_view{} : line.substr(first);
    const bool may_be_empty =
        cmd.starts_with("links") && shared.links.size() == 0 &&
        (cmd.size() == 5 || cmd.find_first_not_of(" \t", 5) == std::string_view::npos);
    if ((reply.empty() && !may_be_empty) || (!reply.empty() && reply.back() != '\n')) {
      std::fprintf(stderr, "reply does not end a line: %s\n", reply.c_str());
      std::abort();
    }
    if (reply.starts_with("error: ") && reply.find('\n') != reply.size() - 1) {
      std::fprintf(stderr, "error reply of more than one line: %s\n", reply.c_str());
      std::abort();
    }
  }
  return 0;
}
