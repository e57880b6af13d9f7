#include "tools/rehearse/plan/render.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/json.h"
#include "tools/rehearse/common/markup.h"

namespace hg::rehearse {

namespace {

using std::chrono::seconds;

std::string when_text(const std::optional<SysSeconds>& t) {
  return t ? format_utc(*t) : std::string("no time bound       ");
}

// Columns by code points, so that "→" and "−" count as one.
std::size_t cols(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s)
    n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string pad(std::string s, std::size_t n) {
  const std::size_t c = cols(s);
  if (c < n) s.append(n - c, ' ');
  return s;
}

}  // namespace

std::string render_text(const ReportHeader& h, const std::vector<NamePlan>& plans) {
  std::string o;
  const PlanInput& in = h.input;
  o += fmt::format("Linger report: cut-over {}, target TTL {} s, moving {}, now {}\n",
                   format_utc(in.cutover), in.target_ttl,
                   in.moving.empty() ? std::string("address") : in.moving, format_utc(in.now));
  o += fmt::format("profile: {}\n", h.profile_origin);
  for (const NamePlan& p : plans) {
    o += "\n" + p.name + "\n";
    if (!p.hops.empty()) {
      o += "  chain, as the authoritative servers publish it (asked with RD=0):\n";
      std::size_t w_owner = 0, w_data = 0;
      auto data_of = [](const Hop& hop) {
        if (hop.type == "NXDOMAIN" || hop.type == "NODATA") return std::string("(negative TTL)");
        return (hop.type == "CNAME" || hop.type == "DNAME" ? "→ " : "") + hop.data;
      };
      for (const Hop& hop : p.hops) {
        w_owner = std::max(w_owner, hop.owner.size());
        w_data = std::max(w_data, cols(data_of(hop)));
      }
      for (std::size_t i = 0; i < p.hops.size(); ++i) {
        const Hop& hop = p.hops[i];
        const bool neg = hop.type == "NXDOMAIN" || hop.type == "NODATA";
        const bool moves = std::find(p.moving_hops.begin(), p.moving_hops.end(),
                                     static_cast<int>(i)) != p.moving_hops.end();
        std::string mark = hop.ttl <= in.target_ttl ? "already ≤ target" : "lower to target";
        if (neg && hop.ttl > in.target_ttl) mark = "lower SOA TTL/MINIMUM to target";
        if (p.planned) {
          if (moves) {
            mark.insert(0, neg ? "new at the cut-over, " : "changes, ");
          } else {
            mark = hop.ttl > in.target_ttl ? "does not change, need not be lowered"
                                           : "does not change";
          }
        }
        if (static_cast<int>(i) == p.limiting_hop && p.planned) mark += ", the limit";
        o += fmt::format("    {}  {:<8} {:>7}  {}  zone {}  [{}]\n", pad(hop.owner, w_owner),
                         hop.type, hop.ttl, pad(data_of(hop), w_data), hop.zone, mark);
        if (!hop.disagreement.empty()) o += "      servers disagree: " + hop.disagreement + "\n";
      }
    }
    for (const ZoneFacts& z : p.zones) {
      auto num = [](const std::optional<uint32_t>& v) {
        return v ? std::to_string(*v) : std::string("?");
      };
      auto neg = z.negative_ttl();
      o += fmt::format(
          "  zone {}: SOA TTL {}, MINIMUM {} → negative TTL {}; REFRESH {}; NS TTL {}; "
          "authoritative: {}\n",
          z.apex, num(z.soa_ttl), num(z.soa_minimum), num(neg), num(z.soa_refresh), num(z.ns_ttl),
          z.servers.empty() ? std::string("none") : fmt::format("{}", fmt::join(z.servers, ", ")));
    }
    if (!p.planned) {
      o += "  NOT PLANNED:\n";
      for (const auto& pr : p.problems)
        o += "    " + pr + "\n";
      continue;
    }
    o += "  timeline:\n";
    for (const TimelineLine& l : p.lines) {
      // A line without a time explains the one above it: no "no time bound" there.
      o += fmt::format("    {}  {}  {}\n", l.when ? format_utc(*l.when) : std::string(20, ' '),
                       pad(l.label, 30), l.explanation);
    }
    if (!p.layers.empty()) {
      o += "  layers on top (profile), old answer gone by:\n";
      std::size_t w = 0;
      for (const LayerLine& l : p.layers)
        w = std::max(w, l.name.size());
      for (const LayerLine& l : p.layers) {
        o += fmt::format("    {}  {}  {}\n", when_text(l.gone_by), pad(l.name, w), l.explanation);
        if (!l.note.empty()) o += fmt::format("    {:20}  {}  note: {}\n", "", pad("", w), l.note);
      }
    }
    if (!p.problems.empty()) {
      o += "  notes:\n";
      for (const auto& pr : p.problems)
        o += "    " + pr + "\n";
    }
  }
  return o;
}

std::string render_json(const ReportHeader& h, const std::vector<NamePlan>& plans) {
  auto t = [](const std::optional<SysSeconds>& v) {
    return v ? base::json::quote(format_utc(*v)) : std::string("null");
  };
  auto u = [](const std::optional<uint32_t>& v) {
    return v ? std::to_string(*v) : std::string("null");
  };
  const PlanInput& in = h.input;
  std::string o = "{\n";
  o +=
      fmt::format("  \"cutover\": {},\n  \"target_ttl\": {},\n  \"now\": {},\n  \"profile\": {},\n",
                  t(in.cutover), in.target_ttl, t(in.now), base::json::quote(h.profile_origin));
  o += fmt::format("  \"moving\": {},\n  \"transfer_margin_flag\": {},\n",
                   base::json::quote(in.moving.empty() ? "address" : in.moving),
                   u(in.transfer_margin));
  o += "  \"names\": [";
  for (std::size_t n = 0; n < plans.size(); ++n) {
    const NamePlan& p = plans[n];
    o += n == 0 ? "\n" : ",\n";
    o += "    {\n";
    o += fmt::format("      \"name\": {},\n      \"planned\": {},\n", base::json::quote(p.name),
                     p.planned ? "true" : "false");
    o += fmt::format("      \"lower_by\": {},\n", t(p.lower_by));
    o += fmt::format("      \"limiting_ttl\": {},\n",
                     p.planned ? std::to_string(p.limiting_ttl) : "null");
    if (p.planned && p.limiting_hop >= 0) {
      const Hop& lim = p.hops[static_cast<std::size_t>(p.limiting_hop)];
      o += fmt::format("      \"limiting_hop\": {{\"owner\": {}, \"type\": {}}},\n",
                       base::json::quote(lim.owner), base::json::quote(lim.type));
    } else {
      o += "      \"limiting_hop\": null,\n";
    }
    o += fmt::format("      \"gone_by_ttl\": {},\n", t(p.gone_by_ttl));
    o += fmt::format(
        "      \"lowered_ttl\": {},\n      \"transfer_margin\": {},\n      \"margin_source\": "
        "{},\n",
        p.planned ? std::to_string(p.lowered_ttl) : "null",
        p.planned ? std::to_string(p.transfer_margin) : "null",
        p.planned ? base::json::quote(p.margin_source) : "null");
    o += fmt::format(
        "      \"missing\": {},\n      \"negative_ttl\": {},\n      \"new_name_by\": {},\n",
        p.missing ? "true" : "false", u(p.negative_ttl), t(p.new_name_by));
    o += "      \"hops\": [";
    for (std::size_t i = 0; i < p.hops.size(); ++i) {
      const Hop& hop = p.hops[i];
      o += i == 0 ? "\n" : ",\n";
      o += fmt::format(
          "        {{\"owner\": {}, \"type\": {}, \"ttl\": {}, \"data\": {}, \"zone\": {}, "
          "\"at_or_below_target\": {}, \"moves\": {}, \"disagreement\": {}, \"servers\": [",
          base::json::quote(hop.owner), base::json::quote(hop.type), hop.ttl,
          base::json::quote(hop.data), base::json::quote(hop.zone),
          hop.ttl <= in.target_ttl ? "true" : "false",
          std::find(p.moving_hops.begin(), p.moving_hops.end(), static_cast<int>(i)) !=
                  p.moving_hops.end()
              ? "true"
              : "false",
          hop.disagreement.empty() ? "null" : base::json::quote(hop.disagreement));
      for (std::size_t s = 0; s < hop.servers.size(); ++s) {
        o += fmt::format("{}{{\"server\": {}, \"ttl\": {}, \"data\": {}}}", s == 0 ? "" : ", ",
                         base::json::quote(hop.servers[s].server), hop.servers[s].ttl,
                         base::json::quote(hop.servers[s].data));
      }
      o += "]}";
    }
    o += p.hops.empty() ? "],\n" : "\n      ],\n";
    o += "      \"zones\": [";
    for (std::size_t i = 0; i < p.zones.size(); ++i) {
      const ZoneFacts& z = p.zones[i];
      std::string servers;
      for (const auto& s : z.servers)
        servers += (servers.empty() ? "" : ", ") + base::json::quote(s);
      o += i == 0 ? "\n" : ",\n";
      o += fmt::format(
          "        {{\"apex\": {}, \"servers\": [{}], \"soa_ttl\": {}, \"soa_minimum\": {}, "
          "\"negative_ttl\": {}, \"soa_refresh\": {}, \"ns_ttl\": {}}}",
          base::json::quote(z.apex), servers, u(z.soa_ttl), u(z.soa_minimum), u(z.negative_ttl()),
          u(z.soa_refresh), u(z.ns_ttl));
    }
    o += p.zones.empty() ? "],\n" : "\n      ],\n";
    o += "      \"timeline\": [";
    for (std::size_t i = 0; i < p.lines.size(); ++i) {
      const TimelineLine& l = p.lines[i];
      o += i == 0 ? "\n" : ",\n";
      o += fmt::format("        {{\"label\": {}, \"time\": {}, \"explanation\": {}}}",
                       base::json::quote(l.label), t(l.when), base::json::quote(l.explanation));
    }
    o += p.lines.empty() ? "],\n" : "\n      ],\n";
    o += "      \"layers\": [";
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      const LayerLine& l = p.layers[i];
      o += i == 0 ? "\n" : ",\n";
      o += fmt::format(
          "        {{\"name\": {}, \"kind\": {}, \"gone_by\": {}, \"explanation\": {}, "
          "\"source\": {}, \"note\": {}}}",
          base::json::quote(l.name), base::json::quote(to_string(l.kind)), t(l.gone_by),
          base::json::quote(l.explanation), base::json::quote(l.source),
          l.note.empty() ? "null" : base::json::quote(l.note));
    }
    o += p.layers.empty() ? "],\n" : "\n      ],\n";
    o += "      \"problems\": [";
    for (std::size_t i = 0; i < p.problems.size(); ++i)
      o += (i == 0 ? "" : ", ") + base::json::quote(p.problems[i]);
    o += "]\n    }";
  }
  o += plans.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

// --- SVG ---------------------------------------------------------------------------------

namespace {

std::string short_span(int64_t s) {
  if (s < 120) return fmt::format("{} s", s);
  if (s < 7200) return fmt::format("{} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{} h", s / 3600);
  return fmt::format("{} d", s / 86400);
}

struct Axis {
  double x0, xc, x1;  // plot start, cut-over, plot end
  SysSeconds cutover;
  double log_before;  // log10(1 + seconds before the cut-over at x0)
  double log_after;   // log10(1 + seconds after the cut-over at x1)

  // Logarithmic on both sides of the cut-over, so that "now" days ahead, "lower by" an hour
  // before, a 30 s hold and a one-day stale window all get room.
  double x(SysSeconds t) const {
    if (t <= cutover) {
      if (log_before <= 0) return xc;
      const double f = std::log10(1.0 + static_cast<double>((cutover - t).count())) / log_before;
      return xc - std::min(f, 1.0) * (xc - x0);
    }
    const double f = std::log10(1.0 + static_cast<double>((t - cutover).count())) / log_after;
    return xc + std::min(f, 1.0) * (x1 - xc);
  }
};

const char* kind_colour(LayerKind k) {
  switch (k) {
    case LayerKind::Fixed:
      return "#e08a2c";
    case LayerKind::Floor:
      return "#d9b23a";
    case LayerKind::Cap:
      return "#9aa3ad";
    case LayerKind::Stale:
      return "#8a5cc2";
    case LayerKind::Until:
      return "#c8453c";
  }
  return "#888";
}

}  // namespace

std::string render_svg(const ReportHeader& h, const std::vector<NamePlan>& plans) {
  constexpr double kWidth = 1100, kLabelW = 300, kRow = 22, kPanelTop = 74, kPanelBottom = 64;
  constexpr double kUnplanned = 64;
  const PlanInput& in = h.input;

  std::vector<double> heights;
  double total = 70;
  for (const NamePlan& p : plans) {
    const double hgt =
        p.planned ? kPanelTop + kRow * static_cast<double>(2 + p.layers.size()) + kPanelBottom
                  : kUnplanned;
    heights.push_back(hgt);
    total += hgt;
  }
  if (plans.empty()) total += 60;

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, total);
  o += fmt::format(
      "<text x=\"16\" y=\"26\" font-size=\"17\" font-weight=\"bold\">Linger report: how long the "
      "old answer lives</text>\n<text x=\"16\" y=\"46\" fill=\"#444\">cut-over {}, target TTL {} "
      "s, now {}; profile: {}</text>\n",
      format_utc(in.cutover), in.target_ttl, format_utc(in.now), markup_escape(h.profile_origin));
  if (plans.empty()) {
    o += "<text x=\"16\" y=\"90\">No name given.</text>\n</svg>\n";
    return o;
  }

  double y = 70;
  for (std::size_t n = 0; n < plans.size(); ++n) {
    const NamePlan& p = plans[n];
    if (!p.planned) {
      // A name that could not be planned still gets its panel: the name and why.
      std::string why = p.problems.empty() ? std::string("no reason recorded") : p.problems[0];
      if (cols(why) > 150) why = why.substr(0, 147) + "...";
      o += fmt::format(
          "<g>\n<text x=\"16\" y=\"{:.1f}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n"
          "<text x=\"16\" y=\"{:.1f}\" fill=\"#c0392b\" font-weight=\"bold\">NOT PLANNED: "
          "<tspan font-weight=\"normal\" fill=\"#444\">{}</tspan></text>\n</g>\n",
          y + 20, markup_escape(p.name), y + 40, markup_escape(why));
      y += heights[n];
      continue;
    }
    // The log part reaches the largest bounded gone-by time, at least a day when some bar
    // has no bound (it then runs to the edge with an arrow).
    int64_t max_after = std::max<int64_t>(60, (*p.gone_by_ttl - in.cutover).count());
    bool unbounded = false;
    for (const LayerLine& l : p.layers) {
      if (l.gone_by) {
        max_after = std::max<int64_t>(max_after, (*l.gone_by - in.cutover).count());
      } else {
        unbounded = true;
      }
    }
    if (unbounded) max_after = std::max<int64_t>(max_after * 4, 86400);
    const bool before = in.now < in.cutover;
    const int64_t lead = before ? (in.cutover - in.now).count() : 0;
    Axis ax{kLabelW + 10,
            kLabelW + 10 + (before ? 0.36 : 0.0) * (kWidth - kLabelW - 40),
            kWidth - 30,
            in.cutover,
            std::log10(1.0 + static_cast<double>(lead)),
            std::log10(1.0 + static_cast<double>(max_after) * 1.15)};

    const Hop& lim = p.hops[static_cast<std::size_t>(p.limiting_hop)];
    const bool negative = lim.type == "NXDOMAIN" || lim.type == "NODATA";
    o += fmt::format(
        "<g>\n<text x=\"16\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", y + 20,
        markup_escape(p.name));
    o += fmt::format(
        "<text x=\"16\" y=\"{}\" fill=\"#444\">changes: {} {} (TTL {} s{}) → lower it by {}; "
        "{} by {}</text>\n",
        y + 38, markup_escape(lim.owner), markup_escape(lim.type), p.limiting_ttl,
        p.transfer_margin ? fmt::format(", margin {} s", p.transfer_margin) : "",
        format_utc(*p.lower_by),
        negative ? "new name visible in TTL-obeying caches"
                 : "TTL-obeying caches drop the old "
                   "answer",
        format_utc(*p.gone_by_ttl));

    const double top = y + kPanelTop;
    const double rows = static_cast<double>(2 + p.layers.size());
    const double bottom = top + kRow * rows;
    // Background bands: before and after the cut-over.
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f4f6f8\"/>\n",
        ax.x0, top - 4, ax.xc - ax.x0, bottom - top + 8);
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fbf7f2\"/>\n",
        ax.xc, top - 4, ax.x1 - ax.xc, bottom - top + 8);

    // Ticks on both sides (log scale) with light grid lines; a label is drawn only where it
    // keeps clear of the cut-over, of "now" and of every label already placed.
    const int64_t ticks[] = {10,    60,        600,        3600,       6 * 3600,
                             86400, 7 * 86400, 30 * 86400, 365 * 86400};
    std::vector<double> placed{ax.xc};
    if (before) placed.push_back(ax.x0);
    auto tick = [&](double tx, const std::string& text) {
      for (double q : placed)
        if (std::fabs(q - tx) < 52) return;
      placed.push_back(tx);
      o += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
          "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" fill=\"#555\">{4}</text>\n",
          tx, top - 4, bottom + 4, bottom + 18, text);
    };
    for (int64_t tk : ticks) {
      if (static_cast<double>(tk) > static_cast<double>(max_after) * 1.15) break;
      tick(ax.x(in.cutover + seconds{tk}), "+" + short_span(tk));
    }
    for (int64_t tk : ticks) {
      if (!before || tk >= lead) break;
      tick(ax.x(in.cutover - seconds{tk}), "−" + short_span(tk));
    }

    // One bar per row, from when that copy starts to matter to when it is gone.
    auto bar = [&](std::size_t row, const std::string& label, const std::string& figure,
                   SysSeconds from, std::optional<SysSeconds> end, const char* colour) {
      const double by = top + kRow * static_cast<double>(row);
      const double start = ax.x(std::max(from, std::min(in.now, in.cutover)));
      // The label and its figure share the left column: shorten a long label (about 6.5 px a
      // character at this size) so the two never overlap.
      std::string shown = label;
      const std::size_t room = static_cast<std::size_t>(
          std::max(8.0, (kLabelW - 24 - 7.0 * static_cast<double>(cols(figure))) / 6.8));
      if (cols(shown) > room) {
        std::size_t keep = 0, chars = 0;
        while (keep < shown.size() && chars + 1 < room) {
          ++keep;
          while (keep < shown.size() && (static_cast<unsigned char>(shown[keep]) & 0xC0) == 0x80)
            ++keep;
          ++chars;
        }
        shown = shown.substr(0, keep) + "…";
      }
      const double stop = end ? ax.x(*end) : ax.x1;
      o += fmt::format(
          "<text x=\"16\" y=\"{:.1f}\">{}</text><text x=\"{:.1f}\" y=\"{:.1f}\" "
          "text-anchor=\"end\" fill=\"#666\">{}</text>\n",
          by + 14, markup_escape(shown), kLabelW, by + 14, markup_escape(figure));
      o += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
          "rx=\"2\"/>\n",
          start, by + 4, std::max(1.0, stop - start), kRow - 8, colour);
      if (!end) {
        o += fmt::format(
            "<path d=\"M{0:.1f},{1:.1f} l8,{2:.1f} l-8,{2:.1f} z\" fill=\"{3}\"/>\n"
            "<text x=\"{4:.1f}\" y=\"{5:.1f}\" text-anchor=\"end\" fill=\"white\" "
            "font-weight=\"bold\">no bound</text>\n",
            stop, by + 2, (kRow - 4) / 2, colour, stop - 6, by + 14);
      } else {
        const int64_t after = (*end - in.cutover).count();
        const std::string txt = after > 0    ? "+" + short_span(after)
                                : after == 0 ? std::string("at the cut-over")
                                             : short_span(-after) + " before";
        const bool inside = stop - start > 90 && stop > ax.x1 - 60;
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\"{}>{}</text>\n",
                         inside ? stop - 4 : stop + 4, by + 14, inside ? "white" : "#333",
                         inside ? " text-anchor=\"end\"" : "", markup_escape(txt));
      }
    };
    // Row 0: copies with the old, long TTL, from lower-by until they have all run out.
    const SysSeconds lowered_at = std::max(*p.lower_by, in.now);
    bar(0, fmt::format("{} {} at its old TTL", lim.owner, lim.type),
        fmt::format("{} s", p.limiting_ttl), lowered_at,
        lowered_at + seconds{p.transfer_margin + p.limiting_ttl}, "#7fa99b");
    bar(1, negative ? "negative answer in caches" : "TTL-obeying caches",
        fmt::format("TTL ≤ {} s", p.lowered_ttl), in.cutover, p.gone_by_ttl, "#3d7cc9");
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      const LayerLine& l = p.layers[i];
      std::string fig(to_string(l.kind));
      if (l.gone_by) {
        if (l.kind != LayerKind::Cap) {
          fig += " " + short_span((*l.gone_by - *p.gone_by_ttl).count());
        } else {
          fig += " (adds 0)";
        }
      }
      bar(i + 2, l.name, fig, in.cutover, l.gone_by, kind_colour(l.kind));
    }

    // Markers: lower-by (dashed) and cut-over (solid red), full height of the panel.
    const double lx = ax.x(lowered_at);
    const bool late = *p.lower_by < in.now;
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#2a8a3a\" "
        "stroke-width=\"2\" stroke-dasharray=\"5,3\"/>\n<text x=\"{3:.1f}\" y=\"{4:.1f}\" "
        "text-anchor=\"{5}\" fill=\"#2a8a3a\">{6}</text>\n",
        lx, top - 14, bottom + 4, lx, top - 18, lx - ax.x0 < 90 ? "start" : "middle",
        late ? "lower by: already past" : "lower by " + format_utc(*p.lower_by).substr(5, 11));
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#c0392b\" "
        "stroke-width=\"2\"/>\n<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" "
        "fill=\"#c0392b\" font-weight=\"bold\">cut-over</text>\n",
        ax.xc, top - 4, bottom + 22, bottom + 34);
    if (before) {
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555\">now</text>\n", ax.x0,
                       bottom + 18);
    }
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">time relative to "
        "the cut-over, logarithmic on both sides (now = {} before)</text>\n</g>\n",
        (ax.x0 + ax.x1) / 2, bottom + 52, before ? short_span(lead) : std::string("0 s"));
    y += heights[n];
  }
  o += "</svg>\n";
  return o;
}

}  // namespace hg::rehearse
