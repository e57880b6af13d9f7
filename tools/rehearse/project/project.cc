// hourglass-rehearse project: the zone owner's projection. Reads an authoritative server's
// queries (dnstap AUTH_QUERY, or a pcap of port 53), treats every querying resolver as its
// own cache, estimates the demand behind it from the gaps between its fetches and projects
// the authoritative load at candidate TTLs. The model is model.h; docs/rehearsal.md.
#include "tools/rehearse/project/project.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/json.h"
#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/replay/summary.h"  // iso_utc, human_duration
#include "wire/message.h"
#include "wire/rdata.h"

namespace hg::rehearse {

namespace {

constexpr double kNs = 1e9;

std::string addr_text(uint8_t family, const std::array<uint8_t, 16>& a, int prefix) {
  if (family == 6) {
    std::string s;
    for (int i = 0; i < 16; i += 2)
      s += fmt::format("{}{:x}", i ? ":" : "", base::load_u16(&a[static_cast<std::size_t>(i)]));
    return prefix < 128 ? fmt::format("{}/{}", s, prefix) : s;
  }
  const std::string s = fmt::format("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
  return prefix < 32 ? fmt::format("{}/{}", s, prefix) : s;
}

}  // namespace

void ProjectInput::add(const TraceEvent& ev) {
  if (ev.side != Side::Client) return;
  if (ev.dnstap_type != 0) {
    if (ev.dnstap_type == 1 || ev.dnstap_type == 2) {
      ++auth_messages;
    } else {
      ++other_messages;
      return;
    }
  }
  if (!msg_.parse(ev.message, wire::ParseMode::Lenient) || msg_.questions().empty()) {
    ++undecodable;
    return;
  }
  const wire::Question& q = msg_.questions()[0];
  std::string qkey = q.name.lowercased().to_text() + " " + wire::to_string(q.type);
  if (first_ns == 0 || ev.time_ns < first_ns) first_ns = ev.time_ns;
  last_ns = std::max(last_ns, ev.time_ns);
  if (ev.role == Role::Response) {
    // The TTL a resolver caches this answer for: its shortest answer record, or for a
    // negative answer min(SOA TTL, SOA MINIMUM) (RFC 2308).
    std::optional<uint32_t> ttl;
    for (const wire::RecordView& rr : msg_.section(wire::Section::Answer))
      ttl = std::min(ttl.value_or(rr.ttl), rr.ttl);
    if (!ttl) {
      for (const wire::RecordView& rr : msg_.section(wire::Section::Authority)) {
        if (rr.type != wire::RRType::SOA || rr.rdlength < 22) continue;
        const auto* p = msg_.packet().data() + rr.rdata_offset + rr.rdlength - 4;
        const uint32_t minimum = base::load_u32(p);
        ttl = std::min(rr.ttl, minimum);
      }
    }
    if (ttl) {
      auto& t = ttl_of[qkey];
      t = std::max(t, *ttl);
    }
    ++responses;
    return;
  }
  if (msg_.header().qr()) return;
  std::array<uint8_t, 16> a = ev.client_addr;
  const int prefix = ev.family == 6 ? prefix6 : prefix4;
  const int bytes = ev.family == 6 ? 16 : 4;
  for (int i = 0; i < bytes; ++i) {
    const int keep = std::clamp(prefix - 8 * i, 0, 8);
    a[static_cast<std::size_t>(i)] &= static_cast<uint8_t>(0xff00u >> keep);
  }
  std::string rkey = addr_text(ev.family, a, prefix);
  series[qkey][rkey].push_back(static_cast<double>(ev.time_ns - base_ns()) / kNs);
  ++per_minute[(ev.time_ns - base_ns()) / 60'000'000'000];
  ++queries;
}

int64_t ProjectInput::base_ns() {
  if (base_ == 0) base_ = first_ns;
  return base_;
}

ProjectResult project(ProjectInput& in, const std::vector<uint32_t>& candidates,
                      std::optional<uint32_t> default_ttl) {
  ProjectResult r;
  r.candidates = candidates;
  const double start = static_cast<double>(in.first_ns - in.base_ns()) / kNs;
  const double end = static_cast<double>(in.last_ns - in.base_ns()) / kNs;
  r.span_s = std::max(end - start, 1e-9);
  std::map<std::string, bool> resolvers;
  r.totals.assign(candidates.size(), {});
  std::vector<double> var_lo(candidates.size()), var_hi(candidates.size());
  for (auto& [qkey, by_resolver] : in.series) {
    NameProjection np;
    np.question = qkey;
    auto it = in.ttl_of.find(qkey);
    if (it != in.ttl_of.end()) {
      // A TTL of 0 is not cached: every query is a fetch. Modelled as 1 s, so rates stay finite.
      np.ttl = std::max<uint32_t>(it->second, 1);
      np.ttl_from = "response";
    } else if (default_ttl) {
      np.ttl = *default_ttl;
      np.ttl_from = "--ttl";
    } else {
      r.missing_ttl.push_back(qkey);
      continue;
    }
    np.at.assign(candidates.size(), {});
    std::vector<double> nlo(candidates.size()), nhi(candidates.size());
    for (auto& [rkey, times] : by_resolver) {
      resolvers[rkey] = true;
      std::sort(times.begin(), times.end());
      FetchSeries s{times, static_cast<double>(np.ttl)};
      const FetchFit f = fit_series(s, start, end);
      np.fetches += f.fetches;
      ++np.resolvers;
      auto& cls = r.classes[static_cast<std::size_t>(f.cls)];
      ++cls.series;
      cls.fetches += f.fetches;
      if (f.cls == FetchClass::Shards) r.max_caches = std::max(r.max_caches, f.caches);
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        const Rate rate = project_rate(f, candidates[c], static_cast<double>(np.ttl));
        np.at[c].mid += rate.mid * r.span_s;
        nlo[c] += std::pow((rate.mid - rate.lo) * r.span_s, 2);
        nhi[c] += std::pow((rate.hi - rate.mid) * r.span_s, 2);
      }
      // The model at today's TTL, for the check against what was observed.
      np.model_now +=
          project_rate(f, static_cast<double>(np.ttl), static_cast<double>(np.ttl)).mid * r.span_s;
    }
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      np.at[c].lo = std::max(0.0, np.at[c].mid - std::sqrt(nlo[c]));
      np.at[c].hi = np.at[c].mid + std::sqrt(nhi[c]);
      r.totals[c].mid += np.at[c].mid;
      var_lo[c] += nlo[c];
      var_hi[c] += nhi[c];
    }
    r.observed += np.fetches;
    r.model_now += np.model_now;
    r.names.push_back(std::move(np));
  }
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    r.totals[c].lo = std::max(0.0, r.totals[c].mid - std::sqrt(var_lo[c]));
    r.totals[c].hi = r.totals[c].mid + std::sqrt(var_hi[c]);
  }
  r.resolvers = resolvers.size();
  std::sort(r.names.begin(), r.names.end(), [](const NameProjection& a, const NameProjection& b) {
    const double da = a.at.empty() ? 0 : a.at.back().mid - static_cast<double>(a.fetches);
    const double db = b.at.empty() ? 0 : b.at.back().mid - static_cast<double>(b.fetches);
    if (da != db) return da > db;
    return a.question < b.question;
  });
  return r;
}

namespace {

constexpr const char* kHelp =
    "usage: hourglass-rehearse project TRACE... --candidates TTL[,TTL...] [options]\n"
    "\n"
    "Projects the queries an authoritative server will receive at other TTLs, from its own\n"
    "log of the queries it received (dnstap AUTH_QUERY/AUTH_RESPONSE, or a pcap of port 53;\n"
    "queries alone suffice with --ttl). Every querying resolver is its own cache: the gaps\n"
    "between its fetches give the demand behind it. See docs/rehearsal.md.\n"
    "\n"
    "  --candidates LIST        TTLs to project, seconds: 300,120,60,30\n"
    "  --ttl SECONDS            today's TTL for questions the trace has no answer for\n"
    "  --prefix4 N              group IPv4 resolvers by /N (default 32: each address)\n"
    "  --prefix6 N              group IPv6 resolvers by /N (default 128: each address)\n"
    "  --price-per-million X    price of a million authoritative queries (none by default)\n"
    "  --top N                  names in the table (default 10)\n"
    "  --json FILE              every figure as JSON (- for stdout)\n"
    "  --port N                 pcap: the DNS port (default 53)\n"
    "  --skip-bad               count and skip corrupt records instead of stopping\n"
    "\n"
    "Exit status: 0 done; 2 bad flag, unreadable trace, or questions without a TTL.\n";

std::string cost(double queries, std::optional<double> price) {
  if (!price) return "-";
  const double c = queries / 1e6 * *price;
  return c >= 100 ? fmt::format("{:.0f}", c) : fmt::format("{:.4g}", c);
}

uint64_t peak_minute(const ProjectInput& in) {
  uint64_t m = 0;
  for (const auto& [minute, n] : in.per_minute)
    m = std::max(m, n);
  return m;
}

}  // namespace

std::string format_project_json(const ProjectResult& r, const ProjectInput& in,
                                std::optional<double> price) {
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  const double per_day = 86400.0 / r.span_s;
  std::string o = "{\n";
  o += fmt::format(
      "  \"trace\": {{\"start\": {}, \"end\": {}, \"duration_s\": {}, \"queries\": {}, "
      "\"responses\": {}, \"auth_messages\": {}, \"other_messages\": {}, \"undecodable\": {}, "
      "\"resolvers\": {}}},\n",
      base::json::quote(iso_utc(in.first_ns)), base::json::quote(iso_utc(in.last_ns)),
      num(r.span_s), in.queries, in.responses, in.auth_messages, in.other_messages, in.undecodable,
      r.resolvers);
  o += fmt::format("  \"observed\": {}, \"model_at_current_ttl\": {},\n", r.observed,
                   num(r.model_now));
  o += "  \"classes\": {";
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    o += fmt::format(
        "{}{}: {{\"series\": {}, \"fetches\": {}, \"share\": {}}}", i ? ", " : "",
        base::json::quote(to_string(static_cast<FetchClass>(i))), r.classes[i].series,
        r.classes[i].fetches,
        num(r.observed ? static_cast<double>(r.classes[i].fetches) / static_cast<double>(r.observed)
                       : 0));
  }
  o += fmt::format("}},\n  \"max_caches_behind_one_address\": {},\n", r.max_caches);
  o += fmt::format("  \"price_per_million\": {},\n", price ? num(*price) : "null");
  o += fmt::format("  \"peak_minute_received\": {},\n", peak_minute(in));
  o += "  \"candidates\": [";
  for (std::size_t c = 0; c < r.candidates.size(); ++c) {
    const Rate& t = r.totals[c];
    o += fmt::format(
        "{}\n    {{\"ttl\": {}, \"queries\": {}, \"queries_lo\": {}, \"queries_hi\": {}, "
        "\"mean_qps\": {}, \"per_day\": {}, \"multiplier\": {}, \"cost_per_day\": {}}}",
        c ? "," : "", r.candidates[c], num(t.mid), num(t.lo), num(t.hi), num(t.mid / r.span_s),
        num(t.mid * per_day), r.observed ? num(t.mid / static_cast<double>(r.observed)) : "null",
        price ? num(t.mid * per_day / 1e6 * *price) : "null");
  }
  o += "\n  ],\n  \"names\": [";
  for (std::size_t i = 0; i < r.names.size(); ++i) {
    const NameProjection& n = r.names[i];
    o += fmt::format(
        "{}\n    {{\"question\": {}, \"ttl\": {}, \"ttl_from\": {}, \"resolvers\": {}, "
        "\"observed\": {}, \"model_at_current_ttl\": {}, \"at\": [",
        i ? "," : "", base::json::quote(n.question), n.ttl, base::json::quote(n.ttl_from),
        n.resolvers, n.fetches, num(n.model_now));
    for (std::size_t c = 0; c < n.at.size(); ++c)
      o += fmt::format("{}{{\"ttl\": {}, \"queries\": {}, \"lo\": {}, \"hi\": {}}}", c ? ", " : "",
                       r.candidates[c], num(n.at[c].mid), num(n.at[c].lo), num(n.at[c].hi));
    o += "]}";
  }
  o += "\n  ]\n}\n";
  return o;
}

std::string format_project_table(const ProjectResult& r, const ProjectInput& in,
                                 std::optional<double> price, std::size_t top) {
  std::string o;
  o += fmt::format("trace:      {} to {} ({}), {} queries from {} resolvers, {} questions\n",
                   iso_utc(in.first_ns), iso_utc(in.last_ns),
                   human_duration(static_cast<int64_t>(r.span_s * kNs)), in.queries, r.resolvers,
                   r.names.size());
  if (in.other_messages > 0 && in.auth_messages == 0) {
    o += "note:       the dnstap holds no AUTH_* messages: these are not an authoritative "
         "server's queries, and the projection assumes they are\n";
  }
  o += fmt::format(
      "check:      at today's TTLs the model gives {:.0f} queries where {} were received "
      "({:+.1f}%)\n",
      r.model_now, r.observed,
      r.observed
          ? (r.model_now - static_cast<double>(r.observed)) / static_cast<double>(r.observed) * 100
          : 0.0);
  o += "classes (resolver × question series, and the share of queries they carry):\n";
  const char* what[] = {"fit: one cache, demand estimated from its gaps",
                        "shards: several caches behind one address (gaps < 0.9 TTL)",
                        "prefetch: refreshed before expiry (gaps in [0.9 TTL, TTL))",
                        "single: fetched once, demand only bounded"};
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    o += fmt::format("  {:<60} {:>8} series {:>10} queries {:>6.1f}%\n", what[i],
                     r.classes[i].series, r.classes[i].fetches,
                     r.observed ? 100.0 * static_cast<double>(r.classes[i].fetches) /
                                      static_cast<double>(r.observed)
                                : 0.0);
  }
  if (r.max_caches > 1)
    o += fmt::format("  (at most {} caches found behind one address)\n", r.max_caches);
  const double per_day = 86400.0 / r.span_s;
  o += fmt::format("\n{:<10} {:>14} {:>24} {:>10} {:>12} {:>9} {:>12}\n", "TTL", "queries",
                   "95% band", "mean QPS", "per day", "vs now", "cost/day");
  o += fmt::format("{:<10} {:>14} {:>24} {:>10.3f} {:>12.0f} {:>9} {:>12}\n", "now (rcvd)",
                   r.observed, "", static_cast<double>(r.observed) / r.span_s,
                   static_cast<double>(r.observed) * per_day, "1.00x",
                   cost(static_cast<double>(r.observed) * per_day, price));
  for (std::size_t c = 0; c < r.candidates.size(); ++c) {
    const Rate& t = r.totals[c];
    o += fmt::format("{:<10} {:>14.0f} {:>24} {:>10.3f} {:>12.0f} {:>9} {:>12}\n",
                     fmt::format("{} s", r.candidates[c]), t.mid,
                     fmt::format("{:.0f} – {:.0f}", t.lo, t.hi), t.mid / r.span_s, t.mid * per_day,
                     r.observed ? fmt::format("{:.2f}x", t.mid / static_cast<double>(r.observed))
                                : std::string("-"),
                     cost(t.mid * per_day, price));
  }
  const uint64_t peak = peak_minute(in);
  o += fmt::format(
      "peak:       the busiest minute received {} queries ({:.2f}/s); scaled by each TTL's "
      "multiplier (the same shape assumed):",
      peak, static_cast<double>(peak) / 60);
  for (std::size_t c = 0; c < r.candidates.size(); ++c)
    o += fmt::format(
        " {} s → {:.0f}", r.candidates[c],
        r.observed ? static_cast<double>(peak) * r.totals[c].mid / static_cast<double>(r.observed)
                   : 0.0);
  o += "\n";
  const std::size_t n = std::min(top, r.names.size());
  if (n > 0) {
    o += fmt::format("\ntop {} questions by added queries at {} s:\n", n, r.candidates.back());
    o += fmt::format("{:<40} {:>6} {:>9} {:>9}", "question", "TTL", "resolvers", "received");
    for (uint32_t c : r.candidates)
      o += fmt::format(" {:>22}", fmt::format("at {} s [band]", c));
    o += "\n";
    for (std::size_t i = 0; i < n; ++i) {
      const NameProjection& x = r.names[i];
      std::string q = x.question;
      if (q.size() > 40) q = "..." + q.substr(q.size() - 37);
      o += fmt::format("{:<40} {:>6} {:>9} {:>9}", q, x.ttl, x.resolvers, x.fetches);
      for (const Rate& a : x.at)
        o += fmt::format(" {:>22}", fmt::format("{:.0f} [{:.0f}–{:.0f}]", a.mid, a.lo, a.hi));
      o += "\n";
    }
  }
  if (!r.missing_ttl.empty()) {
    o += fmt::format("\n{} questions had no answer in the trace and no --ttl: left out\n",
                     r.missing_ttl.size());
  }
  return o;
}

int run_project(int argc, char** argv) {
  std::vector<std::string> files;
  std::vector<uint32_t> candidates;
  std::optional<uint32_t> ttl;
  std::optional<double> price;
  std::size_t top = 10;
  std::string json_path;
  TraceOptions topts;
  ProjectInput in;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (a == "--skip-bad") {
      topts.skip_bad = true;
      continue;
    }
    if (!a.starts_with("--")) {
      files.emplace_back(a);
      continue;
    }
    if (i + 1 >= argc) return usage_error("project", a, "", "a value (see --help)");
    const std::string_view v = argv[++i];
    if (a == "--candidates") {
      std::string_view rest = v;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        auto x = parse_u64(rest.substr(0, comma));
        if (!x || *x == 0 || *x > 604800)
          return usage_error("project", a, v, "TTLs from 1 to 604800 s: 300,60");
        candidates.push_back(static_cast<uint32_t>(*x));
        rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
      }
      if (candidates.empty() || candidates.size() > 16)
        return usage_error("project", a, v, "one to 16 TTLs: 300,120,60,30");
    } else if (a == "--ttl") {
      auto x = parse_u64(v);
      if (!x || *x == 0 || *x > 604800)
        return usage_error("project", a, v, "seconds from 1 to 604800");
      ttl = static_cast<uint32_t>(*x);
    } else if (a == "--prefix4" || a == "--prefix6") {
      auto x = parse_u64(v);
      const uint64_t most = a == "--prefix4" ? 32 : 128;
      if (!x || *x < 8 || *x > most)
        return usage_error("project", a, v, fmt::format("8 to {}", most));
      (a == "--prefix4" ? in.prefix4 : in.prefix6) = static_cast<int>(*x);
    } else if (a == "--price-per-million") {
      double x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (v.empty() || ec != std::errc{} || p != v.data() + v.size() || !(x >= 0) || x > 1e6)
        return usage_error("project", a, v, "a price such as 0.40");
      price = x;
    } else if (a == "--top") {
      auto x = parse_u64(v);
      if (!x || *x > 1'000'000) return usage_error("project", a, v, "a count");
      top = *x;
    } else if (a == "--json") {
      json_path = v;
    } else if (a == "--port") {
      auto x = parse_u64(v);
      if (!x || *x == 0 || *x > 65535)
        return usage_error("project", a, v, "a port from 1 to 65535");
      topts.port = static_cast<uint16_t>(*x);
    } else {
      std::fprintf(stderr, "hourglass-rehearse project: unknown option '%s' (see --help)\n",
                   argv[i - 1]);
      return 2;
    }
  }
  if (files.empty()) {
    std::fputs("hourglass-rehearse project: no TRACE given (see --help)\n", stderr);
    return 2;
  }
  if (candidates.empty())
    return usage_error("project", "--candidates", "", "TTLs to project: 300,120,60,30");
  TraceMerger merger;
  if (!open_traces(files, topts, merger)) return 2;
  TraceEvent ev;
  for (;;) {
    const ReadStatus st = merger.next(ev);
    if (st == ReadStatus::End) break;
    if (st == ReadStatus::Bad) {
      std::fprintf(stderr, "%s\n", merger.error().to_string().c_str());
      return 2;
    }
    in.add(ev);
  }
  if (in.queries == 0) {
    std::fputs("hourglass-rehearse project: the trace holds no queries to project from\n", stderr);
    return 2;
  }
  ProjectResult r = project(in, candidates, ttl);
  if (!r.missing_ttl.empty() && r.names.empty()) {
    std::fprintf(stderr,
                 "hourglass-rehearse project: the trace has queries only (no answers), so the "
                 "TTL is unknown: give --ttl SECONDS, the TTL your servers publish (e.g. %s)\n",
                 r.missing_ttl.front().c_str());
    return 2;
  }
  const std::string table = format_project_table(r, in, price, top);
  std::fwrite(table.data(), 1, table.size(), json_path == "-" ? stderr : stdout);
  if (!json_path.empty()) {
    if (!write_file(json_path, format_project_json(r, in, price))) {
      std::fprintf(stderr, "hourglass-rehearse project: cannot write %s: %s\n", json_path.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  return 0;
}

}  // namespace hg::rehearse
