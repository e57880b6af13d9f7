// render_svg: see plot.h. Buckets beyond the plot's width are combined by their maximum, so
// a peak is never averaged away (the caption says so).
#include "tools/rehearse/replay/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/unix_time.h"
#include "tools/rehearse/common/markup.h"

namespace hg::rehearse {
namespace {

constexpr double kW = 960, kH = 520;
constexpr double kLeft = 80, kRight = 24, kTop = 64, kBottom = 92;
constexpr std::size_t kMaxPoints = 880;  // about one per pixel column of the plot area

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over span.
double nice_step(double span, int target) {
  if (span <= 0) return 1;
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string fmt_num(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// Max-combine `v` into at most kMaxPoints groups of `group` buckets each.
std::vector<double> combine(const std::vector<uint64_t>& v, std::size_t group, double scale) {
  std::vector<double> out;
  out.reserve(v.size() / group + 1);
  for (std::size_t i = 0; i < v.size(); i += group) {
    uint64_t m = 0;
    for (std::size_t j = i; j < std::min(v.size(), i + group); ++j)
      m = std::max(m, v[j]);
    out.push_back(static_cast<double>(m) * scale);
  }
  return out;
}

}  // namespace

std::string render_svg(const ReportInput& in) {
  const ReplayResult& r = in.result;
  const double bucket_s = static_cast<double>(r.bucket_ns) / 1e9;
  const std::size_t n = std::max(r.buckets_before.size(), r.buckets_after.size());
  const std::size_t group = std::max<std::size_t>(1, (n + kMaxPoints - 1) / kMaxPoints);
  const double scale = 1.0 / bucket_s;  // queries per bucket → queries per second
  const auto before = combine(r.buckets_before, group, scale);
  const auto after = combine(r.buckets_after, group, scale);

  // X: seconds since the trace's first event; unit chosen by the trace's length.
  const double span_s = std::max(static_cast<double>(n) * bucket_s, bucket_s);
  double unit = 1;
  const char* unit_name = "s";
  if (span_s > 3 * 3600) {
    unit = 3600;
    unit_name = "h";
  } else if (span_s > 3 * 60) {
    unit = 60;
    unit_name = "min";
  }
  // The Y scale comes from the points after the cold start (the first tenth of the trace, or
  // up to the first switch if that is sooner): a cache that starts empty misses on every
  // name at once, and that spike would flatten everything the plot is for. Points above the
  // scale are clipped at the top and the clipped peak is named.
  const double point_s = static_cast<double>(group) * bucket_s;
  double cold_s = span_s / 10;
  for (int64_t sw : r.switch_ns) {
    const double s = static_cast<double>(sw - r.first_ns) / 1e9;
    if (s >= 0) cold_s = std::min(cold_s, s);
  }
  const auto cold_points = static_cast<std::size_t>(std::floor(cold_s / point_s));
  double ymax = 0, cold_peak = 0;
  for (const auto* v : {&before, &after}) {
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (i < cold_points && v->size() > cold_points) {
        cold_peak = std::max(cold_peak, (*v)[i]);
      } else {
        ymax = std::max(ymax, (*v)[i]);
      }
    }
  }
  ymax *= 1.08;
  double ystep = nice_step(ymax > 0 ? ymax : 1, 5);
  // Clip only a cold start that does not fit under the rounded-up scale anyway.
  const bool clipped = cold_peak > std::max(ystep, std::ceil(ymax / ystep) * ystep);
  if (!clipped && cold_peak > ymax) {
    ymax = cold_peak * 1.02;
    ystep = nice_step(ymax, 5);
  }
  ymax = std::max(ystep, std::ceil(ymax / ystep) * ystep);

  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double s) { return kLeft + s / span_s * pw; };
  auto Y = [&](double q) { return kTop + ph - std::min(q, ymax) / ymax * ph; };

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kW, kH);
  const auto ratio = multiplier(r.before.upstream, r.after.upstream);
  const auto settled = settled_figures(r);
  const auto settled_ratio =
      settled ? multiplier(settled->upstream_before, settled->upstream_after) : std::nullopt;
  o += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Upstream queries, before "
      "vs after the TTL change{}{}</text>\n",
      kLeft, ratio ? fmt::format(" (whole trace x{:.2f}", *ratio) : " (",
      settled_ratio ? fmt::format("; settled x{:.2f})", *settled_ratio) : ")");
  o += fmt::format(
      "<text x=\"{}\" y=\"44\" fill=\"#444\">{} client queries from {} for {}; upstream RTT "
      "{:.1f} ms; prefetch {}</text>\n",
      kLeft, r.queries, markup_escape(iso_utc(r.first_ns)),
      markup_escape(human_duration(r.last_ns - r.first_ns)),
      static_cast<double>(r.upstream_rtt_ns) / 1e6, in.config.prefetch ? "on" : "off");

  // Grid and Y ticks.
  for (double q = 0; q <= ymax + ystep / 2; q += ystep) {
    o += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, Y(q), kLeft + pw, Y(q), kLeft - 6, Y(q) + 4, fmt_num(q));
  }
  // X ticks.
  const double xstep = nice_step(span_s / unit, 8);
  for (double u = 0; u * unit <= span_s + 1e-9; u += xstep) {
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        X(u * unit), kTop, kTop + ph, kTop + ph + 18, fmt_num(u));
  }
  // Axes and labels.
  o += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"black\"/>\n",
      kLeft, kTop, kTop + ph, kLeft + pw);
  o += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time since the trace's start "
      "({})</text>\n",
      kLeft + pw / 2, kTop + ph + 40, unit_name);
  o += fmt::format(
      "<text transform=\"translate(20,{:.1f}) rotate(-90)\" text-anchor=\"middle\">upstream "
      "queries per second ({} s buckets)</text>\n",
      kTop + ph / 2, fmt_num(bucket_s));

  // The settled window, shaded, with its means.
  if (settled) {
    const double s0 = static_cast<double>(settled->from_ns - r.first_ns) / 1e9;
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#fff3d6\" "
        "opacity=\"0.7\"/>\n<text x=\"{:.1f}\" y=\"{}\" fill=\"#8a6100\" "
        "text-anchor=\"end\">settled: mean {:.2f} → {:.2f} /s, peak {:.0f} → {:.0f} /s</text>\n",
        X(s0), kTop, X(span_s) - X(s0), ph, kLeft + pw - 4, kTop + 60, settled->mean_qps_before,
        settled->mean_qps_after, settled->peak_qps_before, settled->peak_qps_after);
  }
  if (clipped) {
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" fill=\"#666\">▲ cold start up to {} /s (clipped: the "
        "scale follows the rest)</text>\n",
        kLeft + 4, kTop + 30, fmt_num(std::round(cold_peak)));
  }
  // Schedule switches, each labelled with the rules that switch then.
  int nth = 0;
  for (int64_t sw : r.switch_ns) {
    const double s = static_cast<double>(sw - r.first_ns) / 1e9;
    if (s < 0 || s > span_s) continue;
    std::string what;
    for (const auto& rule : in.config.schedule) {
      const int64_t at = rule.when == ScheduleRule::When::FromStart
                             ? base::add_ns(r.first_ns, rule.at_ns)
                             : rule.at_ns;
      if (rule.when == ScheduleRule::When::Always || at != sw) continue;
      what +=
          fmt::format("{}{} TTL ≤ {} s", what.empty() ? "" : ", ", rule.zone.to_text(), rule.ttl);
    }
    const bool left = X(s) > kLeft + pw * 0.6;
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#2a9d3a\" "
        "stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n"
        "<text x=\"{3:.1f}\" y=\"{4}\" fill=\"#2a9d3a\"{6}>{5}</text>\n",
        X(s), kTop, kTop + ph, left ? X(s) - 4 : X(s) + 4, kTop + 14 + 14 * (nth++ % 3),
        markup_escape(what + " from " + iso_utc(sw)), left ? " text-anchor=\"end\"" : "");
  }

  // Series: step lines (a bucket is flat over its width).
  auto series = [&](const std::vector<double>& v, const char* colour, double width) {
    std::string pts;
    const double w = static_cast<double>(group) * bucket_s;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double x0 = X(static_cast<double>(i) * w);
      const double x1 = X(std::min(span_s, static_cast<double>(i + 1) * w));
      pts += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x0, Y(v[i]), x1, Y(v[i]));
    }
    return fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" "
        "points=\"{}\"/>\n",
        colour, width, pts);
  };
  o += series(after, "#d6452b", 1.4);
  o += series(before, "#2860c8", 1.4);

  // Legend and caption.
  const double ly = kH - 26;
  o += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#2860c8\" stroke-width=\"3\"/>"
      "<text x=\"{3}\" y=\"{4}\">before: TTLs as the upstream gave them ({5} upstream queries)"
      "</text>\n",
      kLeft, ly, kLeft + 24, kLeft + 30, ly + 4, r.before.upstream);
  o += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#d6452b\" stroke-width=\"3\"/>"
      "<text x=\"{3}\" y=\"{4}\">after: with the schedule ({5} upstream queries)</text>\n",
      kLeft + 470, ly, kLeft + 494, kLeft + 500, ly + 4, r.after.upstream);
  if (group > 1) {
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#666\" font-size=\"11\" text-anchor=\"end\">each step is "
        "the busiest of {} "
        "buckets</text>\n",
        kLeft + pw, kTop - 6, group);
  }
  o += "</svg>\n";
  return o;
}

}  // namespace hg::rehearse
