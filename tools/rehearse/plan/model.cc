#include "tools/rehearse/plan/model.h"

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

std::string layer_explanation(const Layer& l, uint32_t target, bool negative) {
  const std::optional<uint32_t> secs =
      negative && l.negative_seconds ? l.negative_seconds : l.seconds;
  const std::string s = secs ? format_span(*secs) : "";
  const char* what = negative ? "a negative answer" : "an answer";
  switch (l.kind) {
    case LayerKind::Fixed:
      return fmt::format("keeps {} {} whatever its TTL: +{} s", what, s, *secs);
    case LayerKind::Floor:
      return fmt::format("keeps {} its TTL but at least {}: +{} s", what, s, *secs);
    case LayerKind::Cap:
      return fmt::format("keeps its TTL, at most {}: never longer than the caches{}", s,
                         *secs < target ? " (sooner: cap below target)" : "");
    case LayerKind::Stale:
      if (!secs) return "only if its upstream fails: serves the expired answer, no limit";
      return fmt::format("only if its upstream fails: serves the expired answer {} more", s);
    case LayerKind::Until:
      if (!secs) return fmt::format("keeps the old address until {}: no time bound", l.until);
      return fmt::format("keeps the old address until {}, at most {} apart", l.until, s);
  }
  return "";
}

bool is_negative(const Hop& h) {
  return h.type == "NXDOMAIN" || h.type == "NODATA";
}

std::string lower_name(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (o.empty() || o.back() != '.') o += '.';
  return o;
}

/// The hops the move changes, or empty when `moving` names no hop.
std::vector<int> moving_hops_of(const NamePlan& p, std::string_view moving) {
  std::vector<int> out;
  if (p.hops.empty()) return out;
  if (moving.empty() || moving == "address") {
    out.push_back(static_cast<int>(p.hops.size()) - 1);
    return out;
  }
  const std::string want = lower_name(moving);
  for (std::size_t i = 0; i < p.hops.size(); ++i) {
    if (moving == "all" || lower_name(p.hops[i].owner) == want) out.push_back(static_cast<int>(i));
  }
  return out;
}

}  // namespace

bool moving_is_known(const NamePlan& p, std::string_view moving) {
  return !moving_hops_of(p, moving).empty();
}

void compute_timeline(NamePlan& p, const PlanInput& in, const Profile& profile) {
  p.lines.clear();
  p.layers.clear();
  p.moving_hops.clear();
  p.planned = false;
  if (p.failed || p.hops.empty()) return;

  p.moving_hops = moving_hops_of(p, in.moving);
  if (p.moving_hops.empty()) {
    std::string chain;
    for (const Hop& h : p.hops)
      chain += (chain.empty() ? "" : ", ") + h.owner + " " + h.type;
    const std::string pr = fmt::format(
        "--moving {}: no hop of the chain is owned by that name (the chain: {}); "
        "give one of those owners, \"address\" or \"all\"",
        in.moving, chain);
    if (std::find(p.problems.begin(), p.problems.end(), pr) == p.problems.end()) {
      p.problems.push_back(pr);
    }
    return;
  }

  const uint32_t target = in.target_ttl;
  uint32_t longest = 0;
  uint32_t lowered = 0;
  int limiting = -1;
  for (int i : p.moving_hops) {
    const Hop& h = p.hops[static_cast<std::size_t>(i)];
    if (limiting < 0 || h.ttl > longest) {
      longest = h.ttl;
      limiting = i;
    }
    lowered = std::max(lowered, std::min(h.ttl, target));
  }
  const Hop& lim = p.hops[static_cast<std::size_t>(limiting)];
  const bool negative = is_negative(lim);

  // The transfer margin: given, or the SOA REFRESH of the moving hops' zones.
  if (in.transfer_margin) {
    p.transfer_margin = *in.transfer_margin;
    p.margin_source = "--transfer-margin";
  } else {
    std::optional<uint32_t> refresh;
    std::string zone;
    for (int i : p.moving_hops) {
      const std::string& apex = p.hops[static_cast<std::size_t>(i)].zone;
      for (const ZoneFacts& z : p.zones) {
        if (z.apex == apex && z.soa_refresh && (!refresh || *z.soa_refresh > *refresh)) {
          refresh = z.soa_refresh;
          zone = apex;
        }
      }
    }
    p.transfer_margin = refresh.value_or(0);
    p.margin_source = refresh ? "SOA REFRESH of zone " + zone : "unknown (no SOA REFRESH seen)";
  }
  const seconds margin{p.transfer_margin};

  p.planned = true;
  p.limiting_ttl = longest;
  p.limiting_hop = limiting;
  p.lowered_ttl = lowered;
  p.lower_by = in.cutover - margin - seconds{longest};
  p.gone_by_ttl = in.cutover + margin + seconds{lowered};

  const std::string what = negative ? fmt::format("the {} for {}", lim.type, lim.owner)
                                    : fmt::format("{} {}", lim.owner, lim.type);
  const std::string margin_text =
      p.transfer_margin == 0 ? std::string()
                             : fmt::format(" − {} transfer margin ({})",
                                           format_span(p.transfer_margin), p.margin_source);
  std::string label;
  std::string why;
  if (longest <= target) {
    label = "nothing to lower";
    why = fmt::format(
        "{} is already {} s, at or below --target-ttl {} s; a copy fetched before this moment "
        "is gone by the cut-over",
        what, longest, target);
  } else if (negative) {
    label = "lower SOA TTL/MINIMUM by";
    why = fmt::format(
        "cutover − {}{}: a resolver that cached {} just before you lower the zone's SOA TTL "
        "or MINIMUM (RFC 2308: the negative TTL is the smaller of the two) keeps it that long",
        format_span(longest), margin_text, what);
  } else {
    label = p.moving_hops.size() > 1 ? "lower the moving hops by" : "lower " + lim.type + " by";
    why = fmt::format(
        "cutover − {}{}: {} changes at the cut-over; a cache that fetched it just before you "
        "lower its TTL keeps that copy its full old TTL",
        format_span(longest), margin_text, what);
  }
  p.lines.push_back({label, p.lower_by, why});

  // Hops that do not change: say why they need no lowering (the CNAME-above case).
  for (std::size_t i = 0; i < p.hops.size(); ++i) {
    if (std::find(p.moving_hops.begin(), p.moving_hops.end(), static_cast<int>(i)) !=
        p.moving_hops.end()) {
      continue;
    }
    const Hop& h = p.hops[i];
    std::string because;
    if (static_cast<int>(i) < limiting) {
      because = fmt::format(
          "a cache stores each RRset with its own TTL (RFC 2181 §5) and asks for {} {} again "
          "when that TTL runs out, whatever the {}'s TTL; so this {} s {} does not hold the "
          "old {}",
          lim.owner, negative ? "(the negative answer)" : lim.type, h.type, h.ttl, h.type,
          negative                                ? "negative answer"
          : lim.type == "A" || lim.type == "AAAA" ? "address"
                                                  : "data");
    } else {
      because = fmt::format("it is below the hop that changes ({} {}) and stays as it is",
                            lim.owner, lim.type);
    }
    p.lines.push_back(
        {fmt::format("  {} {} {} s", h.owner, h.type, h.ttl), std::nullopt,
         fmt::format("does not change, need not be lowered: {}{}", because,
                     h.ttl > target ? "" : " (it is at or below the target anyway)")});
  }
  if (target > longest) {
    p.lines.push_back(
        {"  --target-ttl above the TTL", std::nullopt,
         fmt::format("--target-ttl {} s is above {}'s TTL {} s: the TTL stays {} s (lowering "
                     "never raises it)",
                     target, what, longest, longest)});
  }
  if (p.transfer_margin > 0 || !in.transfer_margin) {
    p.lines.push_back(
        {"  transfer margin", std::nullopt,
         in.transfer_margin
             ? fmt::format("{} (--transfer-margin): added before lower-by and after the cut-over",
                           format_span(p.transfer_margin))
             : fmt::format("{} from the {}: a secondary that gets no NOTIFY (RFC 1996) may "
                           "serve the old data that long after a change on the primary; plan "
                           "cannot see NOTIFY from outside. With NOTIFY to every secondary, or "
                           "a single server, pass --transfer-margin 0 (or a few seconds)",
                           format_span(p.transfer_margin), p.margin_source)});
  }
  if (*p.lower_by < in.now) {
    p.lines.push_back(
        {"  too late", std::nullopt,
         fmt::format("that moment is past (now {}): lowered now, caches may keep the old TTL "
                     "until {}; move the cut-over there or accept the overlap",
                     format_utc(in.now), format_utc(in.now + margin + seconds{longest}))});
  }
  if (negative) {
    p.new_name_by = p.gone_by_ttl;
    p.lines.push_back(
        {"cut-over", in.cutover,
         fmt::format("you add the record; {} is {} today{}", lim.owner, p.missing_what,
                     lim.type == "NODATA"
                         ? ": the name exists but has no record of this type, and resolvers "
                           "cache that absence like a missing name"
                         : "")});
    p.lines.push_back(
        {"new name visible everywhere", p.new_name_by,
         fmt::format("cutover{} + {} s: a resolver that asked just before the cut-over keeps "
                     "the negative answer min(SOA TTL, MINIMUM) = {} s (RFC 2308 §5){}",
                     p.transfer_margin ? fmt::format(" + {} s margin", p.transfer_margin) : "",
                     lowered, lowered, lowered < longest ? " once lowered as above" : "")});
  } else {
    p.lines.push_back(
        {"cut-over", in.cutover,
         fmt::format("you switch the record; TTL-obeying caches hold at most {} s from {}", lowered,
                     p.transfer_margin ? "when the secondaries have it" : "here")});
    p.lines.push_back(
        {"gone from TTL-obeying caches", p.gone_by_ttl,
         fmt::format("cutover{} + {} s: a cache that refreshed just before the switch keeps "
                     "the old answer one full (lowered) TTL",
                     p.transfer_margin ? fmt::format(" + {} s margin", p.transfer_margin) : "",
                     lowered)});
  }

  for (const Layer& l : profile.layers) {
    LayerLine ll;
    ll.name = l.name;
    ll.kind = l.kind;
    Layer eff = l;
    if (negative && l.negative_seconds) eff.seconds = l.negative_seconds;
    ll.gone_by = layer_gone_by(eff, *p.gone_by_ttl);
    ll.explanation = layer_explanation(l, target, negative);
    ll.source = l.source;
    ll.note = l.note;
    p.layers.push_back(std::move(ll));
  }
}

}  // namespace hg::rehearse
