// watch's logic without the network or the clock: what an answer means (still the old
// address, already the new one, or neither) and, per resolver, the state changes worth a line
// ("flipped old → new after 12 s, TTL 60") and the summary row at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wire/owned.h"
#include "wire/types.h"

namespace hg::rehearse {

struct WatchExpect {
  wire::RRType type = wire::RRType::A;
  std::vector<std::string> old_addrs;  ///< canonical text ("192.0.2.1", "2001:db8::1")
  std::vector<std::string> new_addrs;  ///< empty: anything without an old address is new
};

enum class WatchState : uint8_t { Old, New, Other, NoAnswer };
const char* to_string(WatchState s) noexcept;

struct Observation {
  WatchState state = WatchState::NoAnswer;
  std::string addresses;  ///< the answer's addresses, sorted, space separated
  uint32_t ttl = 0;       ///< the smallest TTL of those address records
  /// The chain as the resolver returned it ("CNAME 3590 → A 250"), empty without a CNAME or
  /// DNAME, and its effective TTL: the smallest TTL of any record of the answer, when the
  /// resolver next asks for some part of it.
  std::string chain;
  uint32_t chain_ttl = 0;
  std::string detail;  ///< "NXDOMAIN", "timeout", ... when there are no addresses
};

/// Classifies an answer: any old address → Old (a mix still hands out the old one); else a
/// new address (or, without --new, any address) → New; else Other.
Observation classify_answer(const wire::OwnedMessage& m, const WatchExpect& e);

/// One resolver's history over the watch.
class ResolverTrack {
 public:
  explicit ResolverTrack(std::string resolver) : resolver_(std::move(resolver)) {}

  /// Records a poll's result at `elapsed_ms` since the start; returns the line to print when
  /// the state changed (or for the first poll), without a trailing newline.
  std::optional<std::string> observe(const Observation& o, int64_t elapsed_ms);

  const std::string& resolver() const noexcept { return resolver_; }
  bool serving_new() const noexcept { return last_ && last_->state == WatchState::New; }
  std::optional<WatchState> first_state() const noexcept {
    return first_ ? std::optional(first_->state) : std::nullopt;
  }
  std::optional<WatchState> last_state() const noexcept {
    return last_ ? std::optional(last_->state) : std::nullopt;
  }
  /// When it last flipped to New (elapsed ms) and the TTL it served then.
  std::optional<int64_t> flipped_at_ms() const noexcept { return flipped_at_; }
  uint32_t flip_ttl() const noexcept { return flip_ttl_; }
  /// The TTL of the old answer at the last poll that still saw it.
  std::optional<uint32_t> last_old_ttl() const noexcept { return last_old_ttl_; }
  /// When this resolver will let go of the old address (elapsed ms), from the last poll that
  /// saw it: that poll + the address records' TTL left (+1 s for whole seconds). A cache that
  /// keeps each RRset on its own TTL (RFC 2181) asks for the address records again then,
  /// whatever the CNAME's TTL; one that keeps whole answers asks at the chain TTL, sooner.
  /// If the authoritative servers still publish the old address then, it gets it again.
  std::optional<int64_t> lets_go_at_ms() const noexcept { return lets_go_at_; }
  int polls() const noexcept { return polls_; }
  int failures() const noexcept { return failures_; }

 private:
  std::string resolver_;
  std::optional<Observation> first_;
  std::optional<Observation> last_;
  std::optional<int64_t> flipped_at_;
  uint32_t flip_ttl_ = 0;
  std::optional<uint32_t> last_old_ttl_;
  std::optional<int64_t> lets_go_at_;
  int polls_ = 0;
  int failures_ = 0;
};

/// "+12s", "+1m05s", "+2h00m"
std::string format_elapsed(int64_t ms);

/// The summary table printed at the end; `duration_ms` is how long the watch ran.
std::string render_watch_summary(const std::vector<ResolverTrack>& tracks, int64_t duration_ms);

}  // namespace hg::rehearse
