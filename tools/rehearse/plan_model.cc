#include "tools/rehearse/plan_model.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace hg::rehearse {

namespace {

using std::chrono::seconds;

bool read_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<SysSeconds> parse_utc(std::string_view t) {
  // YYYY-MM-DDTHH:MM[:SS]Z
  if (t.size() != 17 && t.size() != 20) return std::nullopt;
  if (t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':') {
    return std::nullopt;
  }
  if (t.back() != 'Z' && t.back() != 'z') return std::nullopt;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!read_int(t.substr(0, 4), y) || !read_int(t.substr(5, 2), mo) ||
      !read_int(t.substr(8, 2), d) || !read_int(t.substr(11, 2), h) ||
      !read_int(t.substr(14, 2), mi)) {
    return std::nullopt;
  }
  if (t.size() == 20 && (t[16] != ':' || !read_int(t.substr(17, 2), s))) return std::nullopt;
  if (y < 1970 || h > 23 || mi > 59 || s > 59) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{unsigned(mo)},
                                        std::chrono::day{unsigned(d)}};
  if (!ymd.ok()) return std::nullopt;
  return SysSeconds{std::chrono::sys_days{ymd}} + std::chrono::hours{h} + std::chrono::minutes{mi} +
         seconds{s};
}

std::string format_utc(SysSeconds t) {
  const auto day = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{t - day};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", int(ymd.year()), unsigned(ymd.month()),
                     unsigned(ymd.day()), hms.hours().count(), hms.minutes().count(),
                     hms.seconds().count());
}

std::string format_span(int64_t s) {
  std::string out = fmt::format("{} s", s);
  if (s < 120) return out;
  const int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, r = s % 60;
  std::string human;
  auto add = [&](int64_t v, const char* unit) {
    if (v == 0) return;
    if (!human.empty()) human += ' ';
    human += fmt::format("{} {}", v, unit);
  };
  add(d, "d");
  add(h, "h");
  add(m, "min");
  add(r, "s");
  return out + " (" + human + ")";
}

std::optional<uint32_t> ZoneFacts::negative_ttl() const {
  if (!soa_ttl || !soa_minimum) return std::nullopt;
  return std::min(*soa_ttl, *soa_minimum);
}

std::optional<SysSeconds> layer_gone_by(const Layer& layer, SysSeconds gone_by_ttl) {
  switch (layer.kind) {
    case LayerKind::Cap:
      return gone_by_ttl;
    case LayerKind::Fixed:
    case LayerKind::Floor:
    case LayerKind::Stale:
    case LayerKind::Until:
      if (!layer.seconds) return std::nullopt;
      return gone_by_ttl + seconds{*layer.seconds};
  }
  return std::nullopt;
}

namespace {

std::string layer_explanation(const Layer& l, uint32_t target) {
  const std::string s = l.seconds ? format_span(*l.seconds) : "";
  switch (l.kind) {
    case LayerKind::Fixed:
      return fmt::format("keeps an answer {} whatever its TTL: +{} s", s, *l.seconds);
    case LayerKind::Floor:
      return fmt::format("keeps an answer its TTL but at least {}: +{} s", s, *l.seconds);
    case LayerKind::Cap:
      return fmt::format("keeps its TTL, at most {}: never longer than the caches{}", s,
                         *l.seconds < target ? " (sooner: cap below target)" : "");
    case LayerKind::Stale:
      if (!l.seconds) return "only if its upstream fails: serves the expired answer, no limit";
      return fmt::format("only if its upstream fails: serves the expired answer {} more", s);
    case LayerKind::Until:
      if (!l.seconds) return fmt::format("keeps the old address until {}: no time bound", l.until);
      return fmt::format("keeps the old address until {}, at most {} apart", l.until, s);
  }
  return "";
}

}  // namespace

void compute_timeline(NamePlan& p, const PlanInput& in, const Profile& profile) {
  p.lines.clear();
  p.layers.clear();
  p.planned = false;
  if (p.failed || p.hops.empty()) return;

  const uint32_t target = in.target_ttl;
  uint32_t longest = 0;
  uint32_t gone_ttl = 0;
  int limiting = -1;
  for (std::size_t i = 0; i < p.hops.size(); ++i) {
    const Hop& h = p.hops[i];
    if (limiting < 0 || h.ttl > longest) {
      longest = h.ttl;
      limiting = static_cast<int>(i);
    }
    gone_ttl = std::max(gone_ttl, std::min(h.ttl, target));
  }
  p.planned = true;
  p.limiting_ttl = longest;
  p.limiting_hop = limiting;
  p.lower_by = in.cutover - seconds{longest};
  p.gone_by_ttl = in.cutover + seconds{gone_ttl};

  const Hop& lim = p.hops[static_cast<std::size_t>(limiting)];
  std::size_t above = 0;
  for (const Hop& h : p.hops)
    above += h.ttl > target ? 1 : 0;

  std::string why;
  if (above == 0) {
    why = fmt::format(
        "every hop is already at or below {} s; the largest, {} {} ({} s), still bounds how long "
        "an older copy may be held",
        target, lim.owner, lim.type, lim.ttl);
  } else if (lim.type == "NXDOMAIN" || lim.type == "NODATA") {
    why = fmt::format(
        "cutover − {}: a resolver that cached the {} just before you lower the zone's SOA TTL "
        "or MINIMUM keeps it that long",
        format_span(longest), lim.type);
  } else {
    why = fmt::format(
        "cutover − {}: {} {} has the largest TTL; a cache that fetched it just before you "
        "lower it keeps the old TTL that long{}",
        format_span(longest), lim.owner, lim.type,
        p.hops.size() > 1 ? " (lowering the other hops alone does nothing)" : "");
  }
  p.lines.push_back({"lower every hop by", p.lower_by, why});
  if (*p.lower_by < in.now) {
    p.lines.push_back(
        {"  too late", std::nullopt,
         fmt::format("that moment is past (now {}): lowered now, caches may keep the old TTL "
                     "until {}; move the cut-over there or accept the overlap",
                     format_utc(in.now), format_utc(in.now + seconds{longest}))});
  }
  p.lines.push_back(
      {"cut-over", in.cutover,
       fmt::format("you switch the record; TTL-obeying caches hold at most {} s from here",
                   target)});
  p.lines.push_back(
      {"gone from TTL-obeying caches", p.gone_by_ttl,
       fmt::format("cutover + {} s: a cache that refreshed just before the switch keeps the old "
                   "answer one full (lowered) TTL",
                   gone_ttl)});
  if (p.missing && p.negative_ttl) {
    p.new_name_by = in.cutover + seconds{*p.negative_ttl};
    p.lines.push_back(
        {"new name visible everywhere", p.new_name_by,
         fmt::format("{} is {} today: a resolver that asked just before the cut-over keeps the "
                     "negative answer min(SOA TTL, MINIMUM) = {} s (RFC 2308) unless you lower it",
                     p.hops.back().owner, p.missing_what, *p.negative_ttl)});
  }

  for (const Layer& l : profile.layers) {
    LayerLine ll;
    ll.name = l.name;
    ll.kind = l.kind;
    ll.gone_by = layer_gone_by(l, *p.gone_by_ttl);
    ll.explanation = layer_explanation(l, target);
    ll.source = l.source;
    ll.note = l.note;
    p.layers.push_back(std::move(ll));
  }
}

}  // namespace hg::rehearse
