// The --schedule grammar: see schedule.h and docs/rehearsal.md.
#include "tools/rehearse/replay/schedule.h"

#include <cstdio>
#include <ctime>
#include <limits>

#include "base/decimal.h"
#include "base/duration.h"
#include "base/unix_time.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

}  // namespace

std::optional<int64_t> parse_duration_ns(std::string_view text) {
  const auto d = base::parse_duration(text);
  if (!d || d->count() > std::numeric_limits<int64_t>::max() / kMs) return std::nullopt;
  return d->count() * kMs;
}

std::optional<ScheduleRule> parse_schedule(std::string_view text, std::string& why) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    why = "expected ZONE=TTL or ZONE=TTL@TIME";
    return std::nullopt;
  }
  ScheduleRule rule;
  auto zone = wire::Name::from_text(text.substr(0, eq));
  if (!zone) {
    why = "the zone is not a domain name";
    return std::nullopt;
  }
  rule.zone = zone->lowercased();
  std::string_view rest = text.substr(eq + 1);
  std::string_view when;
  const auto at = rest.find('@');
  if (at != std::string_view::npos) {
    when = rest.substr(at + 1);
    rest = rest.substr(0, at);
  }
  const auto ttl = parse_duration_ns(rest);
  if (!ttl || *ttl % kSec != 0 || *ttl / kSec > 0x7fffffff) {
    why = "the TTL must be whole seconds (60, 90s, 5m, 1h) up to 2147483647 s";
    return std::nullopt;
  }
  rule.ttl = static_cast<uint32_t>(*ttl / kSec);
  if (at != std::string_view::npos && when.empty()) {
    why = "nothing after '@': expected +DURATION, YYYY-MM-DDTHH:MM:SSZ or Unix seconds";
    return std::nullopt;
  }
  if (when.empty()) return rule;
  if (when.front() == '+') {
    const auto d = parse_duration_ns(when.substr(1));
    if (!d) {
      why = "the time after '@+' must be a duration (90s, 15m, 2h, 1d)";
      return std::nullopt;
    }
    rule.when = ScheduleRule::When::FromStart;
    rule.at_ns = *d;
    return rule;
  }
  if (when.find('T') != std::string_view::npos) {
    std::tm tm{};
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
    const std::string w(when);
    if (std::sscanf(w.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        (static_cast<std::size_t>(n) != w.size() &&
         !(static_cast<std::size_t>(n) + 1 == w.size() && w.back() == 'Z')) ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
      why = "the time must be YYYY-MM-DDTHH:MM:SSZ (UTC)";
      return std::nullopt;
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    // Years up to 9999 parse, but past ~2255 a time no longer fits int64 nanoseconds.
    const auto at_ns = base::unix_ns(timegm(&tm), 0);
    if (!at_ns) {
      why = "the time must be between 1970 and 2255";
      return std::nullopt;
    }
    rule.when = ScheduleRule::When::Absolute;
    rule.at_ns = *at_ns;
    return rule;
  }
  const auto unix_s = base::parse_decimal<uint64_t>(when);
  if (!unix_s || !base::unix_ns(*unix_s, 0)) {
    why =
        "the time must be +DURATION (after the trace's start), YYYY-MM-DDTHH:MM:SSZ or Unix "
        "seconds";
    return std::nullopt;
  }
  rule.when = ScheduleRule::When::Absolute;
  rule.at_ns = *base::unix_ns(*unix_s, 0);
  return rule;
}

}  // namespace hg::rehearse
