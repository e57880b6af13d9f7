// hourglass-ctl top: a live terminal view of a running hourglassd, drawn from two samples of
// its control commands `stats`, `upstreams` and `top-names` taken one interval apart: rates
// are the differences divided by the time between the samples, totals are the second
// sample's counters (the same numbers `hourglass-ctl stats` prints at that moment).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hg::ctl {

struct TopSample {
  std::map<std::string, uint64_t, std::less<>> stats;  ///< stats' "key value" lines
  struct Upstream {
    std::string name;
    std::string state;
    std::string srtt_ms;  ///< as the daemon printed it ("-" before any answer)
    uint64_t queries = 0, timeouts = 0;
  };
  std::vector<Upstream> upstreams;
  /// top-names: the busiest names and the names that caused upstream queries, with their
  /// estimated counts; `names_note` is the daemon's comment line (how they are counted) or
  /// why there are none.
  std::vector<std::pair<std::string, uint64_t>> busiest, causes;
  std::string names_note;

  uint64_t get(std::string_view key) const;
};

/// Parses the replies of stats, upstreams and top-names (any of them may be empty).
TopSample parse_top_sample(std::string_view stats, std::string_view upstreams,
                           std::string_view top_names);

/// The view: `before` and `after` taken `seconds` apart. `ansi` adds bold headings; the
/// caller clears the screen. Names are printed with control bytes replaced by '?'.
std::string render_top(const TopSample& before, const TopSample& after, double seconds,
                       const std::string& socket, bool ansi);

/// `hourglass-ctl top [--once] [--interval SECONDS] [--names N]`; words[0] is "top".
int run_top(const std::string& socket, double timeout_s, const std::vector<std::string>& words);

}  // namespace hg::ctl
