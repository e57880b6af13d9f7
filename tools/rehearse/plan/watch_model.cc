#include "tools/rehearse/plan/watch_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "wire/rdata.h"

namespace hg::rehearse {

const char* to_string(WatchState s) noexcept {
  switch (s) {
    case WatchState::Old:
      return "old";
    case WatchState::New:
      return "new";
    case WatchState::Other:
      return "other";
    case WatchState::NoAnswer:
      return "no answer";
  }
  return "?";
}

Observation classify_answer(const wire::OwnedMessage& m, const WatchExpect& e) {
  Observation o;
  if (m.rcode() != wire::RCode::NoError) {
    o.state = WatchState::Other;
    o.detail = wire::to_string(m.rcode());
    return o;
  }
  std::vector<std::string> addrs;
  bool have_ttl = false;
  bool aliased = false;
  for (const auto& rr : m.answer) {
    o.chain_ttl = &rr == &m.answer.front() ? rr.ttl : std::min(o.chain_ttl, rr.ttl);
    if (rr.type == wire::RRType::CNAME || rr.type == wire::RRType::DNAME) {
      aliased = true;
      o.chain +=
          fmt::format("{}{} {}", o.chain.empty() ? "" : " → ", wire::to_string(rr.type), rr.ttl);
    }
  }
  for (const auto& rr : m.answer) {
    if (rr.type != e.type) continue;
    addrs.push_back(wire::rdata_to_text(rr.rdata));
    o.ttl = have_ttl ? std::min(o.ttl, rr.ttl) : rr.ttl;
    have_ttl = true;
  }
  if (aliased && have_ttl) o.chain += fmt::format(" → {} {}", wire::to_string(e.type), o.ttl);
  if (!aliased) o.chain.clear();
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  for (const auto& a : addrs)
    o.addresses += (o.addresses.empty() ? "" : " ") + a;
  if (addrs.empty()) {
    o.state = WatchState::Other;
    o.detail = "no " + wire::to_string(e.type) + " record";
    return o;
  }
  auto any_of = [&](const std::vector<std::string>& set) {
    return std::any_of(addrs.begin(), addrs.end(), [&](const std::string& a) {
      return std::find(set.begin(), set.end(), a) != set.end();
    });
  };
  if (any_of(e.old_addrs)) {
    o.state = WatchState::Old;
  } else if (e.new_addrs.empty() || any_of(e.new_addrs)) {
    o.state = WatchState::New;
  } else {
    o.state = WatchState::Other;
    o.detail = "neither old nor new";
  }
  return o;
}

std::string format_elapsed(int64_t ms) {
  const int64_t s = ms / 1000;
  if (s < 60) return fmt::format("+{}s", s);
  if (s < 3600) return fmt::format("+{}m{:02}s", s / 60, s % 60);
  return fmt::format("+{}h{:02}m", s / 3600, s % 3600 / 60);
}

namespace {

std::string what(const Observation& o) {
  if (o.addresses.empty()) return o.detail;
  if (o.chain.empty()) return fmt::format("{} (TTL {})", o.addresses, o.ttl);
  return fmt::format("{} (TTL {}; chain {}, effective TTL {})", o.addresses, o.ttl, o.chain,
                     o.chain_ttl);
}

}  // namespace

std::optional<std::string> ResolverTrack::observe(const Observation& o, int64_t elapsed_ms) {
  ++polls_;
  if (o.state == WatchState::NoAnswer) ++failures_;
  if (o.state == WatchState::Old) {
    last_old_ttl_ = o.ttl;
    lets_go_at_ = elapsed_ms + (int64_t{o.ttl} + 1) * 1000;
  }
  const std::string at = format_elapsed(elapsed_ms);
  std::optional<std::string> line;
  if (!last_) {
    first_ = o;
    line = fmt::format("{:<8} {}  serves {}: {}", at, resolver_, to_string(o.state), what(o));
    if (o.state == WatchState::Old) {
      *line += fmt::format(" — lets go of the old address by {} if it has changed upstream",
                           format_elapsed(*lets_go_at_));
    }
    if (o.state == WatchState::New) {
      flipped_at_ = elapsed_ms;
      flip_ttl_ = o.ttl;
      *line += " — already new at the start";
    }
  } else if (last_->state != o.state) {
    if (o.state == WatchState::New) {
      flipped_at_ = elapsed_ms;
      flip_ttl_ = o.ttl;
      line = fmt::format("{:<8} {}  flipped {} → new: {}", at, resolver_, to_string(last_->state),
                         what(o));
    } else if (last_->state == WatchState::New) {
      flipped_at_.reset();
      line = fmt::format("{:<8} {}  went back from new to {}: {}", at, resolver_,
                         to_string(o.state), what(o));
    } else {
      line = fmt::format("{:<8} {}  now {}: {}", at, resolver_, to_string(o.state), what(o));
    }
  }
  last_ = o;
  return line;
}

std::string render_watch_summary(const std::vector<ResolverTrack>& tracks, int64_t duration_ms) {
  std::size_t w = 8;
  for (const auto& t : tracks)
    w = std::max(w, t.resolver().size());
  std::string o = fmt::format("\nsummary after {}:\n", format_elapsed(duration_ms).substr(1));
  o += fmt::format("  {:<{}}  {:<9}  {:<9}  {:<10}  {:>10}  {:>12}  {:>10}  {:>5}  {:>8}\n",
                   "resolver", w, "first", "last", "flipped", "TTL at flip", "last old TTL",
                   "lets go by", "polls", "failures");
  std::size_t flipped = 0;
  for (const auto& t : tracks) {
    auto st = [](std::optional<WatchState> s) { return s ? to_string(*s) : "-"; };
    const bool ok = t.serving_new();
    flipped += ok ? 1 : 0;
    o += fmt::format("  {:<{}}  {:<9}  {:<9}  {:<10}  {:>10}  {:>12}  {:>10}  {:>5}  {:>8}\n",
                     t.resolver(), w, st(t.first_state()), st(t.last_state()),
                     ok && t.flipped_at_ms() ? format_elapsed(*t.flipped_at_ms()) : "no",
                     ok ? std::to_string(t.flip_ttl()) : "-",
                     t.last_old_ttl() ? std::to_string(*t.last_old_ttl()) : "-",
                     !ok && t.lets_go_at_ms() ? format_elapsed(*t.lets_go_at_ms()) : "-", t.polls(),
                     t.failures());
  }
  o += fmt::format("{} of {} resolvers serve the new answer\n", flipped, tracks.size());
  return o;
}

}  // namespace hg::rehearse
