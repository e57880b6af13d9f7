// hourglass-rehearse watch: polls resolvers for a name until each serves the new answer.
// Bounded by construction: at least kMinInterval between two rounds, at most kMaxDuration in
// all, at most kMaxResolvers resolvers, one query per resolver per round.
#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/cli_doc.h"
#include "base/duration.h"
#include "tools/rehearse/common/cli_util.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/plan/dns_client.h"
#include "tools/rehearse/plan/watch_model.h"
#include "wire/rdata.h"

namespace hg::rehearse {

namespace {

constexpr int64_t kMinIntervalMs = 1000;
constexpr int64_t kMaxIntervalMs = 3'600'000;
constexpr int64_t kMaxDurationMs = 86'400'000;
constexpr std::size_t kMaxResolvers = 16;

constexpr const char* kWatchHelp =
    "Asks each resolver for NAME every --interval and prints a line whenever one changes from\n"
    "the old answer to the new one (with the TTL it served), then a summary. Stops as soon as\n"
    "every resolver serves the new answer. Exit 0 when all did within --duration, 1 when not,\n"
    "2 on a usage error. At least 1 s between rounds, at most 24 h, at most 16 resolvers.";

/// "A=192.0.2.1" or "AAAA=2001:db8::1" (the type may be left out: "192.0.2.1").
bool parse_rdata_flag(const std::string& text, wire::RRType& type, std::string& addr) {
  std::string value = text;
  std::string t;
  if (auto eq = text.find('='); eq != std::string::npos) {
    t = text.substr(0, eq);
    value = text.substr(eq + 1);
  }
  std::array<uint8_t, 16> buf{};
  if (inet_pton(AF_INET, value.c_str(), buf.data()) == 1) {
    if (!t.empty() && t != "A" && t != "a") return false;
    type = wire::RRType::A;
    addr = value;
    return true;
  }
  if (inet_pton(AF_INET6, value.c_str(), buf.data()) == 1) {
    if (!t.empty() && t != "AAAA" && t != "aaaa") return false;
    type = wire::RRType::AAAA;
    addr = wire::ipv6_to_text(buf);
    return true;
  }
  return false;
}

}  // namespace

int run_watch(int argc, char** argv) {
  CLI::App app{kWatchHelp, "hourglass-rehearse watch"};
  std::string name_text, interval_text = "10s", duration_text = "2h";
  std::vector<std::string> olds, news, resolvers;
  app.add_option("NAME", name_text, "the name being moved")->required();
  app.add_option("--old", olds, "the address being retired, A=ADDR or AAAA=ADDR (repeatable)")
      ->required();
  app.add_option("--new", news,
                 "the address it moves to (repeatable); without it, any answer that no longer "
                 "holds an old address counts as new");
  app.add_option("--resolver", resolvers,
                 "resolver ADDR[:PORT] to poll (repeatable, at most 16); default: the "
                 "nameservers of /etc/resolv.conf");
  app.add_option("--interval", interval_text, "time between rounds, at least 1s")
      ->capture_default_str();
  app.add_option("--duration", duration_text, "give up after this long, at most 24h")
      ->capture_default_str();
  if (const auto exit = parse_or_exit(app, argc, argv, "watch")) return *exit;

  auto name = wire::Name::from_text(name_text);
  if (!name || name_text.empty()) {
    return usage_error("watch", "NAME", name_text, "a domain name such as www.example.com");
  }
  WatchExpect expect;
  std::optional<wire::RRType> type;
  for (auto* list : {&olds, &news}) {
    for (const auto& o : *list) {
      wire::RRType t{};
      std::string addr;
      const char* flag = list == &olds ? "--old" : "--new";
      if (!parse_rdata_flag(o, t, addr)) {
        return usage_error("watch", flag, o, "A=IPV4 or AAAA=IPV6, e.g. A=192.0.2.1");
      }
      if (type && *type != t) {
        return usage_error("watch", flag, o, "the same type (A or AAAA) in every --old and --new");
      }
      type = t;
      (list == &olds ? expect.old_addrs : expect.new_addrs).push_back(addr);
    }
  }
  expect.type = type.value_or(wire::RRType::A);
  std::optional<int64_t> interval;  // milliseconds
  if (const auto d = base::parse_duration(interval_text)) interval = d->count();
  if (!interval || *interval < kMinIntervalMs || *interval > kMaxIntervalMs) {
    return usage_error("watch", "--interval", interval_text, "1s to 1h, e.g. 10s");
  }
  std::optional<int64_t> duration;  // milliseconds
  if (const auto d = base::parse_duration(duration_text)) duration = d->count();
  if (!duration || *duration < *interval || *duration > kMaxDurationMs) {
    return usage_error("watch", "--duration", duration_text,
                       "from the interval up to 24h, e.g. 2h or 30m");
  }
  auto rs = resolvers_or_system("watch", resolvers);
  if (!rs) return 2;
  if (rs->size() > kMaxResolvers) {
    return usage_error("watch", "--resolver", std::to_string(rs->size()) + " resolvers",
                       "at most 16");
  }

  // One try per round, answered well within the interval so rounds never pile up.
  DnsClient::Options copt;
  copt.tries = 1;
  copt.try_timeout = resolver::Millis{std::min<int64_t>(2000, *interval / 2)};
  DnsClient client(copt);
  std::vector<ResolverTrack> tracks;
  for (const auto& r : *rs)
    tracks.emplace_back(r.to_string());

  std::printf("watching %s %s on %zu resolver%s every %s for at most %s (old: %s%s%s)\n",
              name->to_text().c_str(), wire::to_string(expect.type).c_str(), rs->size(),
              rs->size() == 1 ? "" : "s", format_elapsed(*interval).substr(1).c_str(),
              format_elapsed(*duration).substr(1).c_str(),
              fmt::format("{}", fmt::join(expect.old_addrs, " ")).c_str(),
              expect.new_addrs.empty() ? "" : "; new: ",
              fmt::format("{}", fmt::join(expect.new_addrs, " ")).c_str());
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto end = start + std::chrono::milliseconds{*duration};
  auto elapsed_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  bool all_new = false;
  for (auto round = start; round < end; round += std::chrono::milliseconds{*interval}) {
    std::this_thread::sleep_until(round);
    auto outs = client.ask(*rs, *name, expect.type, true);
    const int64_t at = elapsed_ms();
    all_new = true;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      Observation o;
      if (outs[i].ok()) {
        o = classify_answer(*outs[i].answer, expect);
      } else {
        o.state = WatchState::NoAnswer;
        o.detail = outs[i].describe_failure().substr(outs[i].server.to_string().size() + 2);
      }
      if (auto line = tracks[i].observe(o, at)) std::printf("%s\n", line->c_str());
      all_new = all_new && tracks[i].serving_new();
    }
    std::fflush(stdout);
    if (all_new) break;
  }
  std::fputs(render_watch_summary(tracks, elapsed_ms()).c_str(), stdout);
  std::fflush(stdout);
  return all_new ? 0 : 1;
}

}  // namespace hg::rehearse
