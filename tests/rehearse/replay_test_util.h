// Helpers for the replay tests: traces built in memory (wire messages written with the owned
// model) and fed to a ReplayEngine in time order, without any trace file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/cache/cache_test_util.h"
#include "tools/rehearse/replay/engine.h"
#include "tools/rehearse/replay/pipeline.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse::testing {

using cache::testing::A;
using cache::testing::N;
using cache::testing::SOA;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
/// A fixed trace start (2026-01-01T00:00:00Z), so times in tests read as offsets from it.
constexpr int64_t kT0 = 1'767'225'600LL * kSec;

struct OwnedEvent {
  Side side;
  Role role;
  int64_t time_ns;
  int64_t query_time_ns;
  std::vector<uint8_t> bytes;
};

class TraceBuilder {
 public:
  /// A client query for `name` at kT0 + t.
  TraceBuilder& query(int64_t t, std::string_view name, wire::RRType type = wire::RRType::A,
                      uint16_t id = 1) {
    auto m = cache::testing::query(name, type);
    m.header.id = id;
    return add(Side::Client, Role::Query, t, 0, m);
  }
  /// A response carrying one A record with `ttl`.
  TraceBuilder& answer(int64_t t, std::string_view name, uint32_t ttl, Side side = Side::Client,
                       uint16_t id = 1, uint8_t last_octet = 1) {
    auto m = cache::testing::response(name);
    m.header.id = id;
    m.answer.push_back(A(name, ttl, last_octet));
    return add(side, Role::Response, t, 0, m);
  }
  /// An NXDOMAIN with the zone's SOA (TTL soa_ttl, MINIMUM minimum) in the authority section.
  TraceBuilder& nxdomain(int64_t t, std::string_view name, std::string_view zone, uint32_t soa_ttl,
                         uint32_t minimum) {
    auto m = cache::testing::response(name, wire::RRType::A, wire::RCode::NXDomain);
    m.authority.push_back(SOA(zone, soa_ttl, minimum));
    return add(Side::Client, Role::Response, t, 0, m);
  }
  /// The recorder asking its upstream (FORWARDER_QUERY).
  TraceBuilder& forward(int64_t t, std::string_view name, uint16_t id) {
    auto m = cache::testing::query(name);
    m.header.id = id;
    return add(Side::Upstream, Role::Query, t, 0, m);
  }
  TraceBuilder& add(Side side, Role role, int64_t t, int64_t qt, const wire::OwnedMessage& m) {
    // to_wire() returns a 64 KiB buffer: keep only the message.
    const std::vector<uint8_t> w = wire::to_wire(m);
    events_.push_back({side, role, kT0 + t, qt == 0 ? 0 : kT0 + qt, {w.begin(), w.end()}});
    return *this;
  }
  TraceBuilder& raw(Side side, Role role, int64_t t, std::vector<uint8_t> bytes) {
    events_.push_back({side, role, kT0 + t, 0, std::move(bytes)});
    return *this;
  }

  /// Feeds every event in time order (stable: equal times keep insertion order).
  ReplayResult run(const ReplayConfig& config) {
    sort();
    ReplayEngine engine(config);
    for (const OwnedEvent& e : events_) {
      TraceEvent ev;
      ev.side = e.side;
      ev.role = e.role;
      ev.time_ns = e.time_ns;
      ev.query_time_ns = e.query_time_ns;
      ev.message = e.bytes;
      engine.add(ev);
    }
    return engine.finish();
  }
  /// The same through replay_pipelined: a reading thread classifies, this one applies.
  ReplayResult run_pipelined(const ReplayConfig& config, uint64_t* batches = nullptr) {
    sort();
    struct Reader final : TraceReader {
      const std::vector<OwnedEvent>& events;
      std::size_t next_event = 0;
      TraceError err;
      explicit Reader(const std::vector<OwnedEvent>& e) : events(e) {}
      ReadStatus next(TraceEvent& ev) override {
        if (next_event == events.size()) return ReadStatus::End;
        const OwnedEvent& e = events[next_event++];
        ev = TraceEvent{};
        ev.side = e.side;
        ev.role = e.role;
        ev.time_ns = e.time_ns;
        ev.query_time_ns = e.query_time_ns;
        ev.message = e.bytes;
        return ReadStatus::Event;
      }
      const TraceError& error() const override { return err; }
      std::string describe() const override { return "test events"; }
      uint64_t skipped() const override { return 0; }
    } reader(events_);
    ReplayEngine engine(config);
    uint64_t n = 0;
    EXPECT_EQ(replay_pipelined(reader, engine, [&n] { ++n; }), ReadStatus::End);
    if (batches != nullptr) *batches = n;
    return engine.finish();
  }
  std::size_t size() const { return events_.size(); }

 private:
  void sort() {
    std::stable_sort(events_.begin(), events_.end(), [](const OwnedEvent& a, const OwnedEvent& b) {
      return a.time_ns < b.time_ns;
    });
  }

  std::vector<OwnedEvent> events_;
};

inline const NameReport* find(const ReplayResult& r, std::string_view name,
                              wire::RRType type = wire::RRType::A) {
  const wire::Name n = N(name).lowercased();
  for (const auto& x : r.names)
    if (x.name == n && x.qtype == type) return &x;
  return nullptr;
}

inline ScheduleRule rule(std::string_view text) {
  std::string why;
  auto r = parse_schedule(text, why);
  EXPECT_TRUE(r.has_value()) << text << ": " << why;
  return r ? *r : ScheduleRule{};
}

}  // namespace hg::rehearse::testing
