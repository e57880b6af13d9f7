// hourglass-rehearse plan: the linger report — when is the old answer gone everywhere after a
// cut-over? See docs/rehearsal.md, "The linger report".
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/cli_doc.h"
#include "base/duration.h"
#include "base/wall_clock.h"
#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/plan/discover.h"
#include "tools/rehearse/plan/render.h"

namespace hg::rehearse {

namespace {

constexpr const char* kPlanHelp =
    "Follows each NAME's CNAME/DNAME chain, asks every hop's authoritative servers (RD=0) the\n"
    "TTLs they publish, and prints when to lower the RRset that changes (--moving) and when\n"
    "the old answer is gone from caches, serve-stale windows and client layers (the profile).\n"
    "Exit 0 when at least one name was planned, 1 when none could be, 2 on a usage error\n"
    "(a cut-over that is not in the future is one).";

bool write_file(const std::string& flag, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "hourglass-rehearse plan: %s %s: cannot write the file\n", flag.c_str(),
                 path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int run_plan(int argc, char** argv) {
  CLI::App app{kPlanHelp, "hourglass-rehearse plan"};
  std::vector<std::string> names, auth, resolvers;
  std::string target_text, cutover_text, now_text, profile_path, json_path, plot_path;
  std::string type_text = "A", timeout_text = "1s", moving = "address", margin_text;
  int auth_port = 53;
  app.add_option("NAME", names, "names to plan (each followed through its CNAME/DNAME chain)")
      ->required();
  app.add_option("--target-ttl", target_text, "the TTL every hop is lowered to, in seconds")
      ->required();
  app.add_option("--cutover", cutover_text, "the switch time, UTC: 2026-12-03T10:00Z")->required();
  app.add_option("--auth", auth,
                 "authoritative server ADDR[:PORT] to ask for every zone (repeatable); "
                 "default: the zones' NS servers, found through --resolver");
  app.add_option("--resolver", resolvers,
                 "recursive resolver ADDR[:PORT] to find zones and NS servers (repeatable); "
                 "default: the nameservers of /etc/resolv.conf");
  app.add_option("--auth-port", auth_port, "port of the NS servers found through --resolver")
      ->capture_default_str();
  app.add_option("--type", type_text, "address type at the end of the chain: A or AAAA")
      ->capture_default_str();
  app.add_option("--timeout", timeout_text, "per-try timeout of each query (2 tries)")
      ->capture_default_str();
  app.add_option("--profile", profile_path,
                 "TOML profile of client layers and stale windows; default: the built-in one "
                 "(tools/rehearse/default-profile.toml)");
  app.add_option("--json", json_path, "also write the report as JSON to FILE");
  app.add_option("--plot", plot_path, "also draw the timelines as SVG to FILE");
  app.add_option("--moving", moving,
                 "the hop that changes at the cut-over: \"address\" (the A/AAAA records at the "
                 "end of the chain, or the negative answer of a new name), an owner name of the "
                 "chain (a CNAME you repoint), or \"all\"")
      ->capture_default_str();
  app.add_option("--transfer-margin", margin_text,
                 "seconds a secondary may lag the primary (added before lower-by and after the "
                 "cut-over); default: the zone's SOA REFRESH, as NOTIFY cannot be seen from "
                 "outside. 0 for one server, or when NOTIFY reaches every secondary");
  app.add_option("--now", now_text, "pretend it is this time (UTC), for reproducible reports");
  if (const auto exit = parse_or_exit(app, argc, argv, "plan")) return *exit;

  auto bad = [](const std::string& flag, const std::string& value, const std::string& allowed) {
    return usage_error("plan", flag, value, allowed);
  };
  auto target = base::parse_seconds(target_text);
  if (!target || target->count() > 604800) {
    return bad("--target-ttl", target_text, "whole seconds from 0 to 604800, e.g. 60");
  }
  auto cutover = parse_utc(cutover_text);
  if (!cutover) return bad("--cutover", cutover_text, "a UTC time like 2026-12-03T10:00Z");
  PlanInput in{*cutover, static_cast<uint32_t>(target->count()),
               base::wall_now<std::chrono::seconds>()};
  if (!now_text.empty()) {
    auto now = parse_utc(now_text);
    if (!now) return bad("--now", now_text, "a UTC time like 2026-12-01T08:00Z");
    in.now = *now;
  }
  if (in.cutover <= in.now) {
    return bad("--cutover", cutover_text,
               "a time in the future (now " + format_utc(in.now) +
                   "); a past cut-over has nothing left to plan");
  }
  in.moving = moving;
  if (moving.empty()) return bad("--moving", moving, "\"address\", \"all\" or an owner name");
  if (moving != "address" && moving != "all") {
    auto n = wire::Name::from_text(moving);
    if (!n) return bad("--moving", moving, "\"address\", \"all\" or an owner name");
  }
  if (!margin_text.empty()) {
    auto m = base::parse_seconds(margin_text);
    if (!m || m->count() > 604800) {
      return bad("--transfer-margin", margin_text, "whole seconds from 0 to 604800, e.g. 0 or 300");
    }
    in.transfer_margin = static_cast<uint32_t>(m->count());
  }
  auto qtype = wire::rrtype_from_text(type_text);
  if (!qtype || (*qtype != wire::RRType::A && *qtype != wire::RRType::AAAA)) {
    return bad("--type", type_text, "A or AAAA");
  }
  auto timeout = base::parse_duration(timeout_text);
  if (!timeout || timeout->count() < 100 || timeout->count() > 10000) {
    return bad("--timeout", timeout_text, "100ms to 10s, e.g. 1s or 500ms");
  }
  if (auth_port < 1 || auth_port > 65535) {
    return bad("--auth-port", std::to_string(auth_port), "1 to 65535");
  }

  DiscoverOptions dopt;
  dopt.type = *qtype;
  dopt.auth_port = static_cast<uint16_t>(auth_port);
  for (const auto& a : auth) {
    auto ep = base::parse_endpoint(a, 53);
    if (!ep) return bad("--auth", a, "a numeric address with an optional port, e.g. 192.0.2.1:53");
    dopt.auth.push_back(*ep);
  }
  if (dopt.auth.empty()) {
    auto rs = resolvers_or_system("plan", resolvers);
    if (!rs) return 2;
    dopt.resolvers = std::move(*rs);
  }

  Profile profile = default_profile();
  if (!profile_path.empty()) {
    auto p = read_profile(profile_path);
    if (!p) {
      std::fprintf(stderr, "hourglass-rehearse plan: %s\n", p.error().c_str());
      return 2;
    }
    profile = std::move(p.value());
  }

  std::vector<wire::Name> qnames;
  for (const auto& n : names) {
    auto name = wire::Name::from_text(n);
    if (!name || n.empty()) return bad("NAME", n, "a domain name such as www.example.com");
    qnames.push_back(name.value());
  }

  DnsClient::Options copt;
  copt.try_timeout = resolver::Millis{*timeout};
  DnsClient client(copt);
  Discoverer disc(client, dopt);
  std::vector<NamePlan> plans;
  bool any = false;
  for (const auto& q : qnames) {
    NamePlan p = disc.discover(q);
    compute_timeline(p, in, profile);
    any = any || p.planned;
    plans.push_back(std::move(p));
  }
  const ReportHeader header{in, profile.origin};
  std::fputs(render_text(header, plans).c_str(), stdout);
  std::fflush(stdout);
  if (!json_path.empty() && !write_file("--json", json_path, render_json(header, plans))) return 2;
  if (!plot_path.empty() && !write_file("--plot", plot_path, render_svg(header, plans))) return 2;
  if (!any) {
    std::fprintf(stderr, "hourglass-rehearse plan: no name could be planned (see the report)\n");
    return 1;
  }
  return 0;
}

}  // namespace hg::rehearse
