// hourglass-rehearse report: one file for the change ticket. For each candidate TTL, when to
// lower (plan's timeline), what the low TTL costs (replay of a resolver-side trace, or the
// projection of an authoritative one), when the old answer is gone per layer, and the names
// that add the most load — as a self-contained HTML page (inline SVG, no network fetches) and
// the same figures as JSON. docs/rehearsal.md, "report".
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/duration.h"
#include "base/json.h"
#include "base/wall_clock.h"
#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/common/markup.h"
#include "tools/rehearse/plan/discover.h"
#include "tools/rehearse/plan/render.h"
#include "tools/rehearse/project/project.h"
#include "tools/rehearse/replay/engine.h"
#include "tools/rehearse/replay/pipeline.h"
#include "tools/rehearse/replay/plot.h"
#include "tools/rehearse/replay/summary.h"

namespace hg::rehearse {

namespace {

constexpr const char* kHelp =
    "One report for the change ticket: for each candidate TTL, when to lower (as plan), what\n"
    "the low TTL costs (as replay for a resolver's trace, as project for an authoritative\n"
    "server's), when the old answer is gone per layer, and the names adding the most load.\n"
    "Writes a self-contained HTML file and the same figures as JSON. Exit 0 when written, 1\n"
    "when no name could be planned, 2 on a usage or trace error.";

struct Cost {
  std::string source;  // "replay" or "project"
  uint64_t before = 0;
  double after = 0, after_lo = 0, after_hi = 0;
  double span_s = 0;
  double mean_before = 0, mean_after = 0;
  double peak_before = 0, peak_after = 0;  // per second, busiest bucket (replay)
  struct Top {
    std::string name;
    double before = 0, after = 0;
  };
  std::vector<Top> top;
  double added_per_day() const { return (after - static_cast<double>(before)) * 86400 / span_s; }
  std::optional<double> multiplier() const {
    if (before == 0) return std::nullopt;
    return after / static_cast<double>(before);
  }
};

struct Candidate {
  uint32_t ttl = 0;
  std::vector<NamePlan> plans;
  Cost cost;
  std::string plot_svg;  // replay's figure, when the cost came from a replay
};

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return static_cast<bool>(f);
}

std::string opt_time(const std::optional<SysSeconds>& t) {
  return t ? format_utc(*t) : std::string("no bound");
}

std::string num(double v) {
  return fmt::format("{:.6g}", v);
}

std::string group(double v) {
  std::string s = fmt::format("{:.0f}", v);
  const bool neg = !s.empty() && s[0] == '-';
  for (int i = static_cast<int>(s.size()) - 3; i > (neg ? 1 : 0); i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// The latest bounded moment any layer (or the TTL-obeying caches) lets go, over the names.
std::optional<SysSeconds> latest_bounded(const std::vector<NamePlan>& plans, bool& unbounded) {
  std::optional<SysSeconds> latest;
  unbounded = false;
  for (const NamePlan& p : plans) {
    if (!p.planned) continue;
    latest = std::max(latest.value_or(*p.gone_by_ttl), *p.gone_by_ttl);
    for (const LayerLine& l : p.layers) {
      if (l.gone_by) {
        latest = std::max(*latest, *l.gone_by);
      } else {
        unbounded = true;
      }
    }
  }
  return latest;
}

std::optional<SysSeconds> earliest_lower_by(const std::vector<NamePlan>& plans) {
  std::optional<SysSeconds> t;
  for (const NamePlan& p : plans)
    if (p.planned) t = std::min(t.value_or(*p.lower_by), *p.lower_by);
  return t;
}

std::string render_json(const std::vector<Candidate>& cands, const PlanInput& base,
                        const std::vector<std::string>& traces, const std::string& profile) {
  std::string o = "{\n";
  o += fmt::format(
      "  \"cutover\": {},\n  \"now\": {},\n  \"moving\": {},\n  \"profile\": {},\n",
      base::json::quote(format_utc(base.cutover)), base::json::quote(format_utc(base.now)),
      base::json::quote(base.moving.empty() ? "address" : base.moving), base::json::quote(profile));
  o += "  \"traces\": [";
  for (std::size_t i = 0; i < traces.size(); ++i)
    o += (i ? ", " : "") + base::json::quote(traces[i]);
  o += "],\n  \"candidates\": [";
  for (std::size_t c = 0; c < cands.size(); ++c) {
    const Candidate& k = cands[c];
    o += fmt::format("{}\n    {{\"ttl\": {}, \"names\": [", c ? "," : "", k.ttl);
    for (std::size_t n = 0; n < k.plans.size(); ++n) {
      const NamePlan& p = k.plans[n];
      o += fmt::format(
          "{}\n      {{\"name\": {}, \"planned\": {}, \"lower_by\": {}, \"gone_by_ttl\": {}, "
          "\"limiting_ttl\": {}, \"transfer_margin\": {}, \"layers\": [",
          n ? "," : "", base::json::quote(p.name), p.planned ? "true" : "false",
          p.lower_by ? base::json::quote(format_utc(*p.lower_by)) : "null",
          p.gone_by_ttl ? base::json::quote(format_utc(*p.gone_by_ttl)) : "null",
          p.planned ? std::to_string(p.limiting_ttl) : "null",
          p.planned ? std::to_string(p.transfer_margin) : "null");
      for (std::size_t l = 0; l < p.layers.size(); ++l)
        o += fmt::format(
            "{}{{\"name\": {}, \"gone_by\": {}}}", l ? ", " : "",
            base::json::quote(p.layers[l].name),
            p.layers[l].gone_by ? base::json::quote(format_utc(*p.layers[l].gone_by)) : "null");
      o += "], \"problems\": [";
      for (std::size_t i = 0; i < p.problems.size(); ++i)
        o += (i ? ", " : "") + base::json::quote(p.problems[i]);
      o += "]}";
    }
    const Cost& ct = k.cost;
    const auto m = ct.multiplier();
    o += fmt::format(
        "\n    ], \"cost\": {{\"source\": {}, \"span_s\": {}, \"queries_before\": {}, "
        "\"queries_after\": {}, \"queries_after_lo\": {}, \"queries_after_hi\": {}, "
        "\"mean_qps_before\": {}, \"mean_qps_after\": {}, \"peak_qps_before\": {}, "
        "\"peak_qps_after\": {}, \"multiplier\": {}, \"added_per_day\": {}, \"top\": [",
        base::json::quote(ct.source), num(ct.span_s), ct.before, num(ct.after), num(ct.after_lo),
        num(ct.after_hi), num(ct.mean_before), num(ct.mean_after), num(ct.peak_before),
        num(ct.peak_after), m ? num(*m) : "null", num(ct.added_per_day()));
    for (std::size_t i = 0; i < ct.top.size(); ++i)
      o += fmt::format("{}{{\"name\": {}, \"before\": {}, \"after\": {}}}", i ? ", " : "",
                       base::json::quote(ct.top[i].name), num(ct.top[i].before),
                       num(ct.top[i].after));
    o += "]}}";
  }
  o += "\n  ]\n}\n";
  return o;
}

std::string render_html(const std::vector<Candidate>& cands, const PlanInput& base,
                        const std::vector<std::string>& traces, const std::string& profile,
                        const std::string& plan_svg) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>TTL change report</title>\n<style>\n"
      "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px;color:#222}\n"
      "table{border-collapse:collapse;margin:8px 0 20px}\n"
      "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;font-size:13px}\n"
      "th{background:#f0f3f6}td.l,th.l{text-align:left}\n"
      "h1{font-size:22px}h2{font-size:18px;margin-top:28px}.note{color:#555;font-size:13px}\n"
      "</style></head><body>\n";
  o += "<h1>TTL change report</h1>\n";
  std::string names;
  if (!cands.empty())
    for (const NamePlan& p : cands.front().plans)
      names += (names.empty() ? "" : ", ") + p.name;
  std::string tr;
  for (const auto& t : traces)
    tr += (tr.empty() ? "" : ", ") + t;
  o += fmt::format(
      "<p>Names: <b>{}</b><br>Cut-over: <b>{}</b> (report made as of {})<br>Changing hop: "
      "{}; profile: {}<br>Traffic: {} (cost from {})</p>\n",
      markup_escape(names), format_utc(base.cutover), format_utc(base.now),
      markup_escape(base.moving.empty() ? "address" : base.moving), markup_escape(profile),
      markup_escape(tr), cands.empty() ? "-" : markup_escape(cands.front().cost.source));

  o += "<h2>Decision table</h2>\n<table><tr><th>candidate TTL</th><th>lower by</th>"
       "<th>gone from TTL-obeying caches</th><th>last bounded layer lets go</th>"
       "<th>queries before</th><th>queries after</th><th>multiplier</th>"
       "<th>added per day</th><th>peak QPS after</th></tr>\n";
  for (const Candidate& k : cands) {
    bool unbounded = false;
    const auto last = latest_bounded(k.plans, unbounded);
    std::optional<SysSeconds> gone;
    for (const NamePlan& p : k.plans)
      if (p.planned) gone = std::max(gone.value_or(*p.gone_by_ttl), *p.gone_by_ttl);
    const auto m = k.cost.multiplier();
    o += fmt::format(
        "<tr><td>{} s</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}{}</td>"
        "<td>{}</td><td>{}</td><td>{:.2f}</td></tr>\n",
        k.ttl, opt_time(earliest_lower_by(k.plans)), opt_time(gone), opt_time(last),
        unbounded ? " (some layers: no bound)" : "", group(static_cast<double>(k.cost.before)),
        group(k.cost.after),
        k.cost.after_hi > k.cost.after_lo
            ? fmt::format(" [{}–{}]", group(k.cost.after_lo), group(k.cost.after_hi))
            : "",
        m ? fmt::format("{:.2f}x", *m) : "new", group(k.cost.added_per_day()), k.cost.peak_after);
  }
  o += "</table>\n<p class=\"note\">Queries are over the trace's span ";
  o += cands.empty() ? "" : fmt::format("({:.0f} s)", cands.front().cost.span_s);
  o += "; \"added per day\" scales the difference to a day: the price of keeping the low TTL "
       "from lower-by until it is raised again. Lower-by is for the changing hop with the "
       "transfer margin; see docs/rehearsal.md.</p>\n";

  // Per name: one row per layer, one column per candidate TTL.
  if (!cands.empty()) {
    for (std::size_t n = 0; n < cands.front().plans.size(); ++n) {
      const NamePlan& first = cands.front().plans[n];
      o += fmt::format("<h2>{}: when the old answer is gone</h2>\n", markup_escape(first.name));
      if (!first.planned) {
        o += fmt::format("<p>NOT PLANNED: {}</p>\n",
                         markup_escape(first.problems.empty() ? "" : first.problems.front()));
        continue;
      }
      const Hop& lim = first.hops[static_cast<std::size_t>(first.limiting_hop)];
      o += fmt::format(
          "<p class=\"note\">changing hop: {} {} (TTL {} s); transfer margin {} s "
          "({})</p>\n<table><tr><th class=\"l\">layer</th>",
          markup_escape(lim.owner), markup_escape(lim.type), first.limiting_ttl,
          first.transfer_margin, markup_escape(first.margin_source));
      for (const Candidate& k : cands)
        o += fmt::format("<th>at {} s</th>", k.ttl);
      o += "</tr>\n<tr><td class=\"l\">lower by</td>";
      for (const Candidate& k : cands)
        o += fmt::format("<td>{}</td>", opt_time(k.plans[n].lower_by));
      o += "</tr>\n<tr><td class=\"l\">TTL-obeying caches</td>";
      for (const Candidate& k : cands)
        o += fmt::format("<td>{}</td>", opt_time(k.plans[n].gone_by_ttl));
      o += "</tr>\n";
      for (std::size_t l = 0; l < first.layers.size(); ++l) {
        o += fmt::format("<tr><td class=\"l\">{}</td>", markup_escape(first.layers[l].name));
        for (const Candidate& k : cands)
          o += fmt::format("<td>{}</td>", opt_time(k.plans[n].layers[l].gone_by));
        o += "</tr>\n";
      }
      o += "</table>\n";
    }
    // The names adding the most load, per candidate side by side.
    o += "<h2>Names adding the most load</h2>\n<table><tr><th class=\"l\">name</th>"
         "<th>today</th>";
    for (const Candidate& k : cands)
      o += fmt::format("<th>at {} s</th>", k.ttl);
    o += "</tr>\n";
    const Candidate& low = cands.back();
    for (const auto& t : low.cost.top) {
      o += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td>", markup_escape(t.name),
                       group(t.before));
      for (const Candidate& k : cands) {
        auto it = std::find_if(k.cost.top.begin(), k.cost.top.end(),
                               [&](const Cost::Top& x) { return x.name == t.name; });
        o += fmt::format("<td>{}</td>", it == k.cost.top.end() ? "-" : group(it->after));
      }
      o += "</tr>\n";
    }
    o += "</table>\n";
  }
  if (!cands.empty()) {
    o += fmt::format("<h2>Timeline at {} s</h2>\n", cands.back().ttl);
    o += plan_svg;
    if (!cands.back().plot_svg.empty()) {
      o += fmt::format("<h2>Upstream load at {} s</h2>\n", cands.back().ttl);
      o += cands.back().plot_svg;
    }
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace

int run_report(int argc, char** argv) {
  CLI::App app{kHelp, "hourglass-rehearse report"};
  std::vector<std::string> names, auth, resolvers, traces;
  std::string cutover_text, now_text, profile_path, json_path, html_path, candidates_text;
  std::string moving = "address", margin_text, timeout_text = "1s";
  std::optional<uint32_t> ttl_flag;
  std::string side = "auto";
  app.add_option("NAME", names, "names to plan")->required();
  app.add_option("--cutover", cutover_text, "the switch time, UTC: 2026-12-03T10:00Z")->required();
  app.add_option("--candidates", candidates_text, "candidate TTLs: 300,120,60,30")->required();
  app.add_option("--trace", traces, "a trace (dnstap or pcap; repeatable)")->required();
  app.add_option("--html", html_path, "write the report as HTML to FILE")->required();
  app.add_option("--json", json_path, "also write the figures as JSON to FILE");
  app.add_option("--auth", auth, "authoritative server ADDR[:PORT] (repeatable), as plan");
  app.add_option("--resolver", resolvers, "recursive resolver ADDR[:PORT], as plan");
  app.add_option("--moving", moving, "the hop that changes, as plan")->capture_default_str();
  app.add_option("--transfer-margin", margin_text, "seconds, as plan");
  app.add_option("--profile", profile_path, "TOML profile of layers, as plan");
  app.add_option("--ttl", ttl_flag, "authoritative queries-only traces: today's TTL, as project");
  app.add_option("--now", now_text, "pretend it is this time (UTC)");
  app.add_option("--side", side,
                 "whose trace: resolver (replayed), auth (projected), or auto: auth when the "
                 "dnstap holds AUTH_* messages (a pcap is taken as a resolver's)")
      ->capture_default_str();
  if (const auto exit = parse_or_exit(app, argc, argv, "report")) return *exit;
  auto bad = [](const std::string& flag, const std::string& value, const std::string& allowed) {
    return usage_error("report", flag, value, allowed);
  };
  if (side != "auto" && side != "auth" && side != "resolver")
    return bad("--side", side, "auto, auth or resolver");
  std::vector<uint32_t> candidates;
  {
    std::string_view rest = candidates_text;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      auto v = base::parse_seconds(rest.substr(0, comma));
      if (!v || v->count() <= 0 || v->count() > 604800)
        return bad("--candidates", candidates_text, "300,60,30");
      candidates.push_back(static_cast<uint32_t>(v->count()));
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    }
    if (candidates.empty() || candidates.size() > 8)
      return bad("--candidates", candidates_text, "one to 8 TTLs: 300,120,60,30");
    std::sort(candidates.rbegin(), candidates.rend());
  }
  auto cutover = parse_utc(cutover_text);
  if (!cutover) return bad("--cutover", cutover_text, "a UTC time like 2026-12-03T10:00Z");
  PlanInput base{*cutover, candidates.front(), hg::base::wall_now<std::chrono::seconds>()};
  if (!now_text.empty()) {
    auto now = parse_utc(now_text);
    if (!now) return bad("--now", now_text, "a UTC time like 2026-12-01T08:00Z");
    base.now = *now;
  }
  if (base.cutover <= base.now)
    return bad("--cutover", cutover_text,
               "a time in the future (now " + format_utc(base.now) + ")");
  base.moving = moving;
  if (!margin_text.empty()) {
    auto m = hg::base::parse_seconds(margin_text);
    if (!m || m->count() > 604800) return bad("--transfer-margin", margin_text, "0 to 604800");
    base.transfer_margin = static_cast<uint32_t>(m->count());
  }
  Profile profile = default_profile();
  if (!profile_path.empty()) {
    auto p = read_profile(profile_path);
    if (!p) {
      std::fprintf(stderr, "hourglass-rehearse report: %s\n", p.error().c_str());
      return 2;
    }
    profile = std::move(p.value());
  }
  DiscoverOptions dopt;
  for (const auto& a : auth) {
    auto ep = base::parse_endpoint(a, 53);
    if (!ep) return bad("--auth", a, "a numeric address with an optional port");
    dopt.auth.push_back(*ep);
  }
  if (dopt.auth.empty()) {
    auto rs = resolvers_or_system("report", resolvers);
    if (!rs) return 2;
    dopt.resolvers = std::move(*rs);
  }
  std::vector<wire::Name> qnames;
  for (const auto& n : names) {
    auto name = wire::Name::from_text(n);
    if (!name || n.empty()) return bad("NAME", n, "a domain name such as www.example.com");
    qnames.push_back(name.value());
  }

  // Read the trace once: is it an authoritative server's (AUTH_*) or a resolver's?
  ProjectInput pin;
  {
    TraceMerger merger;
    for (const auto& f : traces) {
      TraceError err;
      auto reader = open_trace(f, TraceOptions{}, err);
      if (!reader) {
        std::fprintf(stderr, "%s\n", err.to_string().c_str());
        return 2;
      }
      merger.add(std::move(reader));
    }
    TraceEvent ev;
    for (ReadStatus st; (st = merger.next(ev)) != ReadStatus::End;) {
      if (st == ReadStatus::Bad) {
        std::fprintf(stderr, "%s\n", merger.error().to_string().c_str());
        return 2;
      }
      pin.add(ev);
    }
  }
  const bool authoritative = side == "auth" || (side == "auto" && pin.auth_messages > 0);

  // Discover once; the timeline per candidate.
  DnsClient client(DnsClient::Options{});
  Discoverer disc(client, dopt);
  std::vector<NamePlan> found;
  found.reserve(qnames.size());
  for (const auto& q : qnames)
    found.push_back(disc.discover(q));
  std::vector<Candidate> cands;
  bool any = false;
  std::string plan_svg;
  for (uint32_t ttl : candidates) {
    Candidate k;
    k.ttl = ttl;
    PlanInput in = base;
    in.target_ttl = ttl;
    for (NamePlan p : found) {
      compute_timeline(p, in, profile);
      any = any || p.planned;
      k.plans.push_back(std::move(p));
    }
    plan_svg = render_svg(ReportHeader{in, profile.origin}, k.plans);
    cands.push_back(std::move(k));
  }
  if (!any) {
    std::fputs("hourglass-rehearse report: no name could be planned\n", stderr);
    return 1;
  }
  // The zones whose TTL changes: each planned name's changing hop.
  std::vector<std::string> owners;
  for (const NamePlan& p : found) {
    NamePlan q = p;
    compute_timeline(q, base, profile);
    if (q.planned) owners.push_back(q.hops[static_cast<std::size_t>(q.limiting_hop)].owner);
  }

  if (authoritative) {
    // Only the questions at or below the changing owners change their TTL.
    ProjectInput only = pin;
    for (auto it = only.series.begin(); it != only.series.end();) {
      const std::string qname = it->first.substr(0, it->first.find(' '));
      bool keep = false;
      for (const auto& o : owners)
        keep = keep || qname == o || (qname.size() > o.size() && qname.ends_with("." + o));
      it = keep ? std::next(it) : only.series.erase(it);
    }
    const ProjectResult r = project(only, candidates, ttl_flag);
    if (r.names.empty()) {
      std::fputs(
          "hourglass-rehearse report: the authoritative trace has no queries for the "
          "names (or, queries only, give --ttl)\n",
          stderr);
      return 2;
    }
    for (std::size_t c = 0; c < cands.size(); ++c) {
      Cost& ct = cands[c].cost;
      ct.source = "project";
      ct.span_s = r.span_s;
      ct.before = r.observed;
      ct.after = r.totals[c].mid;
      ct.after_lo = r.totals[c].lo;
      ct.after_hi = r.totals[c].hi;
      ct.mean_before = static_cast<double>(r.observed) / r.span_s;
      ct.mean_after = ct.after / r.span_s;
      for (std::size_t i = 0; i < std::min<std::size_t>(10, r.names.size()); ++i)
        ct.top.push_back(
            {r.names[i].question, static_cast<double>(r.names[i].fetches), r.names[i].at[c].mid});
    }
  } else {
    for (Candidate& k : cands) {
      ReplayConfig config;
      for (const auto& o : owners) {
        std::string why;
        auto rule = parse_schedule(o + "=" + std::to_string(k.ttl), why);
        if (rule) config.schedule.push_back(*rule);
      }
      TraceMerger merger;
      for (const auto& f : traces) {
        TraceError err;
        auto reader = open_trace(f, TraceOptions{}, err);
        if (!reader) return 2;
        merger.add(std::move(reader));
      }
      ReplayEngine engine(config);
      if (replay_pipelined(merger, engine) == ReadStatus::Bad) {
        std::fprintf(stderr, "%s\n", merger.error().to_string().c_str());
        return 2;
      }
      const ReplayResult res = engine.finish();
      Cost& ct = k.cost;
      ct.source = "replay";
      ct.span_s = std::max(res.duration_s(), static_cast<double>(res.bucket_ns) / 1e9);
      ct.before = res.before.upstream;
      ct.after = ct.after_lo = ct.after_hi = static_cast<double>(res.after.upstream);
      ct.mean_before = static_cast<double>(res.before.upstream) / ct.span_s;
      ct.mean_after = ct.after / ct.span_s;
      ct.peak_before =
          static_cast<double>(res.before.peak_bucket) * 1e9 / static_cast<double>(res.bucket_ns);
      ct.peak_after =
          static_cast<double>(res.after.peak_bucket) * 1e9 / static_cast<double>(res.bucket_ns);
      const auto top = by_added_load(res);
      for (std::size_t i = 0; i < std::min<std::size_t>(10, top.size()); ++i)
        ct.top.push_back({top[i]->name.to_text() + " " + wire::to_string(top[i]->qtype),
                          static_cast<double>(top[i]->before.upstream),
                          static_cast<double>(top[i]->after.upstream)});
      ReportInput rin{res, config, traces, merger.describe(), merger.skipped()};
      k.plot_svg = render_svg(rin);
    }
  }

  const std::string html = render_html(cands, base, traces, profile.origin, plan_svg);
  if (!write_text(html_path, html)) {
    std::fprintf(stderr, "hourglass-rehearse report: --html %s: cannot write the file\n",
                 html_path.c_str());
    return 2;
  }
  if (!json_path.empty() &&
      !write_text(json_path, render_json(cands, base, traces, profile.origin))) {
    std::fprintf(stderr, "hourglass-rehearse report: --json %s: cannot write the file\n",
                 json_path.c_str());
    return 2;
  }
  std::printf("wrote %s%s%s: %zu candidate TTLs, %zu names, cost from %s\n", html_path.c_str(),
              json_path.empty() ? "" : " and ", json_path.c_str(), cands.size(), names.size(),
              authoritative ? "the projection (authoritative trace)" : "a replay (resolver trace)");
  return 0;
}

}  // namespace hg::rehearse
