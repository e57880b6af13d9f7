// libFuzzer target for the whole request path: a client packet in, answers out, through the
// real QueryEngine (admission, cache lookup and insert, in-flight table, serve-stale,
// deadlines, failure cache, rendering) with a scripted upstream instead of c-ares.
//
// Input layout (every byte is fuzzer-chosen):
//
//   | mode (1) | advance (1) | split (2) | client packet (split bytes) | upstream bytes (rest) |
//
//   mode bit 0: the client came over TCP (else UDP)
//   mode bit 1: the upstream answer is built as "our query's header+question with QR set,
//               then the upstream bytes as records" (reaches the cache), else sent verbatim
//   mode bit 2: the upstream fails (status from bits 4-7) instead of answering
//   mode bit 3: the upstream stays silent until after the clock moved (deadline path)
//   advance:    seconds the test clock moves after the query (TTL countdown, stale, expiry)
//
// State (the cache, the failure cache) persists across inputs on purpose: that is how
// entries go stale and get served stale. Properties checked, each an abort when violated:
//  1. every answer parses in Strict mode and carries the client's ID;
//  2. a UDP answer is at most the client's payload size (512 without EDNS) and at most 1232;
//  3. every query that was deferred is answered exactly once by the end of the input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "resolver/query/query_engine.h"
#include "wire/header.h"
#include "wire/message.h"

namespace {

using namespace hg;
using resolver::Millis;
using resolver::MonoTime;

struct Harness {
  struct Sent {
    std::vector<uint8_t> query;
    resolver::Upstream::Callback done;
  };

  Harness()
      : loop(resolver::EventLoop::Options{.clock = [this] { return now; }}),
        shared(make_config()),
        engine(
            shared, loop,
            [this](std::span<const uint8_t> q, resolver::Upstream::Callback done) {
              sent.push_back({std::vector<uint8_t>(q.begin(), q.end()), std::move(done)});
            },
            0) {
    sink = [this](std::span<const uint8_t> b) { check_answer(b, expected_id, expected_limit); };
  }

  static resolver::Config make_config() {
    resolver::Config c;
    c.cache_size = 1 << 20;  // small, so eviction runs too
    return c;
  }

  static void fail(const char* what) {
    std::fprintf(stderr, "handler_fuzz: %s\n", what);
    std::abort();
  }

  void check_answer(std::span<const uint8_t> b, uint16_t id, std::size_t limit) {
    ++answers;
    if (b.empty()) return;  // a dropped TCP query
    wire::Message m;
    if (auto st = m.parse(b, wire::ParseMode::Strict); !st) {
      std::fprintf(stderr, "handler_fuzz: %s at offset %zu in:", to_string(st.error().code).data(),
                   st.error().offset);
      for (uint8_t c : b)
        std::fprintf(stderr, " %02x", c);
      std::fprintf(stderr, "\n");
      fail("answer does not parse");
    }
    if (m.header().id != id) fail("answer has another ID");
    if (!m.header().qr()) fail("answer without QR");
    if (b.size() > limit) fail("answer larger than the client may receive");
  }

  MonoTime now{Millis{1'000'000'000}};
  resolver::EventLoop loop;
  resolver::Shared shared;
  resolver::QueryEngine engine;
  std::deque<Sent> sent;
  std::function<void(std::span<const uint8_t>)> sink;
  uint16_t expected_id = 0;
  std::size_t expected_limit = 0;
  std::size_t answers = 0;
};

std::vector<uint8_t> build_answer(const std::vector<uint8_t>& query,
                                  std::span<const uint8_t> records) {
  // Our query's header and question, QR set, counts from the first 6 record bytes.
  wire::Message q;
  if (!q.parse(query) || q.questions().empty()) Harness::fail("our upstream query is malformed");
  const std::size_t question_end = q.questions()[0].end;
  std::vector<uint8_t> out(question_end + (records.size() > 6 ? records.size() - 6 : 0));
  std::copy(query.begin(), query.begin() + static_cast<std::ptrdiff_t>(question_end), out.begin());
  out.at(2) = static_cast<uint8_t>(out.at(2) | 0x80);
  for (std::size_t i = 0; i < 6; ++i)
    out.at(6 + i) = i < records.size() ? records[i] : 0;
  if (records.size() > 6)
    std::copy(records.begin() + 6, records.end(),
              out.begin() + static_cast<std::ptrdiff_t>(question_end));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Harness* h = new Harness();  // lives for the whole run (state persists on purpose)
  if (size < 4) return 0;
  const uint8_t mode = data[0];
  const uint8_t advance = data[1];
  std::size_t split = static_cast<std::size_t>(base::load_u16(&data[2]));
  std::span<const uint8_t> rest(data + 4, size - 4);
  if (split > rest.size()) split = rest.size();
  const auto packet = rest.first(split);
  const auto upstream = rest.subspan(split);

  const bool tcp = (mode & 1) != 0;
  std::vector<uint8_t> out(tcp ? 65535 : resolver::UdpListener::kMaxAnswer);
  resolver::Route route;
  route.is_tcp = tcp;
  route.sink = &h->sink;

  // The client's ID and payload size, for checking the answers.
  h->expected_id = packet.size() >= 2 ? base::load_u16(&packet[0]) : 0;
  h->expected_limit = tcp ? 65535 : 512;
  {
    wire::Message m;
    if (!tcp && m.parse(packet, wire::ParseMode::Strict) && m.edns())
      h->expected_limit = std::min<std::size_t>(m.edns()->effective_udp_size(), 1232);
  }

  h->answers = 0;
  const std::size_t sent_before = h->sent.size();
  const auto res = h->engine.on_query(packet, nullptr, route, out);
  if (res.size > 0)
    h->check_answer(std::span<const uint8_t>(out.data(), res.size), h->expected_id,
                    h->expected_limit);
  if (res.size > 0 && res.deferred) Harness::fail("answered now and deferred");

  auto settle = [&] {
    while (!h->sent.empty()) {
      auto s = std::move(h->sent.front());
      h->sent.pop_front();
      if (mode & 4) {
        const auto status = static_cast<resolver::UpstreamStatus>(1 + (mode >> 4) % 10);
        s.done(status, {});
      } else if (mode & 2) {
        auto a = build_answer(s.query, upstream);
        s.done(resolver::UpstreamStatus::Ok, a);
      } else {
        s.done(resolver::UpstreamStatus::Ok, upstream);
      }
    }
  };
  if (h->sent.size() > sent_before && !(mode & 8)) settle();
  h->now += Millis{1000} * advance;
  h->loop.run_once(Millis{0});  // deadlines
  settle();
  h->loop.run_once(Millis{0});
  if (res.deferred && h->answers != 1) Harness::fail("a deferred query was not answered once");
  if (h->shared.inflight.size() != 0) Harness::fail("in-flight entry left behind");
  return 0;
}
