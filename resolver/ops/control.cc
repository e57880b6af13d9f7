#include "resolver/ops/control.h"

#include <fmt/core.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "base/duration.h"
#include "base/text.h"
#include "resolver/ops/control_commands.h"
#include "resolver/ops/shadow_control.h"
#include "resolver/ops/warm_restart.h"
#include "resolver/text.h"
#include "wire/message.h"
#include "wire/owned.h"
#include "wire/print.h"

namespace hg::resolver {

namespace {

constexpr std::size_t kDumpEntriesPerChunk = 64;
constexpr int64_t kMaxCapSeconds = 2147483647;  // RFC 2181 §8: TTLs are 31-bit

/// "flush, flush-zone, ttl-cap and ttl-cap-clear": the commands that take --fleet.
std::string fleet_commands() {
  std::vector<std::string_view> names;
  for (const ControlCommand& c : kControlCommands)
    if (c.fleet) names.push_back(c.name);
  return base::text::join_and(names);
}

/// The `help` reply: per command of kControlCommands "NAME ARGS" in a 24-column field (on a
/// line of its own when longer) and its help, then the commands that take --fleet.
std::string help_text() {
  std::string out;
  for (const ControlCommand& c : kControlCommands) {
    std::string head(c.name);
    if (!c.args.empty()) (head += ' ') += c.args;
    if (head.size() < 24) {
      out += fmt::format("{:<24}{}\n", head, c.help);
    } else {
      out += fmt::format("{}\n{:<24}{}\n", head, "", c.help);
    }
  }
  out += fmt::format("  ({} take --fleet: Redis and every instance too)\n", fleet_commands());
  return out;
}

Control::Output fleet_misplaced() {
  return {fmt::format("error: --fleet goes only with {}\n", fleet_commands())};
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

Control::Output error(const std::string& message) {
  return {"error: " + message + "\n"};
}

/// Parses a NAME or ZONE argument; on failure `why` gets the error text.
std::optional<wire::Name> parse_name(std::string_view text, std::string& why) {
  auto n = wire::Name::from_text(text);
  if (n) return n.value();
  why = fmt::format("'{}' is not a domain name ({} at offset {})", text,
                    wire::to_string(n.error().code), n.error().offset);
  return std::nullopt;
}

Control::Output usage(std::string_view command, std::string_view args) {
  return error(fmt::format("usage: {} {}", command, args));
}

Control::Output stats_text(Shared& shared) {
  const cache::CacheStats c = shared.cache.stats();
  const Stats& s = shared.stats;
  std::string out;
  auto line = [&out](std::string_view key, uint64_t value) {
    out += fmt::format("{} {}\n", key, value);
  };
  line("cache.entries", c.entries);
  line("cache.bytes", c.bytes);
  line("cache.capacity_bytes", c.capacity_bytes);
  line("cache.hits", c.hits);
  line("cache.stale_hits", c.stale_hits);
  line("cache.misses", c.misses);
  line("cache.inserts", c.inserts);
  line("cache.evictions", c.evictions);
  line("cache.expired", c.expired);
  line("cache.failure_entries", c.failure_entries);
  line("cache.ttl_caps", shared.cache.ttl_caps().size());
  const auto r = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  line("server.queries_udp", r(s.queries_udp));
  line("server.queries_tcp", r(s.queries_tcp));
  line("server.hits", r(s.hits));
  line("server.stale_answers", r(s.stale_answers));
  line("server.misses", r(s.misses));
  line("server.coalesced", r(s.coalesced));
  line("server.prefetches", r(s.prefetches));
  line("server.upstream_queries", r(s.upstream_queries));
  line("server.upstream_answers", r(s.upstream_answers));
  line("server.upstream_failures", r(s.upstream_failures));
  line("server.scrubbed_records", r(s.scrubbed_records));
  line("server.clamped_ttls", r(s.clamped_ttls));
  line("server.minimal_any", r(s.minimal_any));
  line("server.rebind_blocked", r(s.rebind_blocked));
  line("server.servfail", r(s.servfail));
  line("server.deadline_answers", r(s.deadline_answers));
  line("server.failure_cached_answers", r(s.failure_cached_answers));
  line("server.refused", r(s.refused));
  line("server.formerr", r(s.formerr));
  line("server.notimp", r(s.notimp));
  line("server.dropped", r(s.dropped));
  line("server.overload", r(s.overload));
  line("server.share_refused", r(s.share_refused));
  line("server.zone_capped", r(s.zone_capped));
  line("server.rate_limited", r(s.rate_limited));
  line("server.truncated", r(s.truncated));
  line("dnssec.secure", r(s.dnssec_secure));
  line("dnssec.insecure", r(s.dnssec_insecure));
  line("dnssec.bogus", r(s.dnssec_bogus));
  line("dnssec.fetches", r(s.dnssec_fetches));
  line("dnssec.synthesized", r(s.dnssec_synthesized));
  line("server.local_answers", r(s.local_answers));
  line("server.hosts_answers", r(s.hosts_answers));
  line("server.forwarded_queries", r(s.forwarded));
  line("dnstap.written", r(shared.dnstap.written));
  line("dnstap.dropped", r(shared.dnstap.dropped));
  line("inflight.queries", shared.inflight.size());
  line("inflight.waiters", shared.inflight.waiters());
  out += conn_stats_lines(shared.tcp_conns, "tcp.");
  if (shared.config.metrics) out += conn_stats_lines(shared.metrics_conns, "metrics.");
  out += shadow_stats_lines(shared);
  if (shared.config.redis.enabled()) out += fleet_stats_text(shared);
  return {std::move(out)};
}

/// One entry: a comment line saying what it answers and how long it has left, then its
/// records as dig prints them, with each record's TTL as at `now`.
void dump_entry(const cache::Entry& e, MonoTime now, std::chrono::seconds stale_max,
                std::string& out) {
  out += "; ";
  out += describe_entry(e, now, stale_max, true);
  out += '\n';
  const std::vector<uint8_t> bytes = e.to_wire(now);
  wire::Message m;
  std::optional<wire::OwnedMessage> owned;
  if (m.parse(bytes, wire::ParseMode::Strict)) {
    if (auto o = wire::to_owned(m)) owned = std::move(o.value());
  }
  if (!owned) {
    out += "; (records cannot be decoded)\n";  // cannot happen: entries hold our writer's bytes
    return;
  }
  for (auto section : {wire::Section::Answer, wire::Section::Authority, wire::Section::Additional})
    for (const auto& rr : owned->section(section))
      out += wire::record_to_text(rr) + "\n";
}

Control::Output dump(Shared& shared, std::optional<wire::Name> only, MonoTime now) {
  auto entries =
      std::make_shared<std::vector<std::shared_ptr<const cache::Entry>>>(shared.cache.snapshot());
  if (only) {
    std::erase_if(*entries, [&](const auto& e) { return !(e->qname() == *only); });
  }
  const std::chrono::seconds stale_max = shared.cache.settings().stale_max;
  Control::Output o;
  o.more = [entries, next = std::size_t{0}, now, stale_max, only](std::string& out) mutable {
    const std::size_t end = std::min(entries->size(), next + kDumpEntriesPerChunk);
    for (; next < end; ++next) {
      dump_entry(*(*entries)[next], now, stale_max, out);
      (*entries)[next].reset();  // let an evicted entry go as soon as it is printed
    }
    if (next < entries->size()) return true;
    out += fmt::format("; {} {}{}\n", entries->size(), entries->size() == 1 ? "entry" : "entries",
                       only ? " for " + only->lowercased().to_text() : std::string());
    return false;
  };
  return o;
}

std::string dnssec_text(const Shared& shared) {
  const Config& c = shared.config;
  const auto get = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  std::string out;
  if (shared.anchors == nullptr) {
    out = "dnssec mode=off\n";
  } else {
    const DnssecPath path = shared.dnssec_upstreams.path();
    std::string zones, insecure;
    for (const auto& z : shared.anchors->zones())
      zones += (zones.empty() ? "" : ",") + z.zone.to_text();
    for (const auto& z : shared.anchors->insecure())
      insecure += (insecure.empty() ? "" : ",") + z.to_text();
    out = fmt::format(
        "dnssec mode={} default_upstreams={} trust_anchor={} anchors={} anchored_zones={} "
        "insecure_domains={}\n",
        c.dnssec == Config::Dnssec::Require ? "require" : "validate",
        path == DnssecPath::Validate   ? "validated"
        : path == DnssecPath::Insecure ? "insecure"
                                       : "refused",
        c.trust_anchor_file, shared.anchors->count(), zones, insecure.empty() ? "-" : insecure);
    for (const DnssecServerState& d : shared.dnssec_upstreams.servers())
      out += fmt::format("upstream {} dnssec={} ({})\n", d.server.to_string(),
                         to_string(d.capability), d.detail);
  }
  const Stats& s = shared.stats;
  out += fmt::format("verdicts secure={} insecure={} bogus={} fetches={} synthesized={}\n",
                     get(s.dnssec_secure), get(s.dnssec_insecure), get(s.dnssec_bogus),
                     get(s.dnssec_fetches), get(s.dnssec_synthesized));
  return out;
}

}  // namespace

Control::Output Control::execute(Shared& shared, std::string_view line, MonoTime now) {
  auto words = split_words(line);
  // `--fleet` (anywhere after the command): flush and ttl-cap also go to Redis and to every
  // instance of the fleet (resolver/fleet/fleet_cache.h).
  const auto fleet_flag = std::find(words.begin(), words.end(), std::string_view("--fleet"));
  const bool fleet = fleet_flag != words.end() && fleet_flag != words.begin();
  if (fleet) words.erase(fleet_flag);
  if (words.empty()) return error("empty request; try 'help'");
  const std::string_view cmd = words[0];
  // Only the commands of the table are dispatched (so `help` and hourglass-ctl list them all).
  const ControlCommand* known = find_control_command(cmd);
  if (known == nullptr) {
    const std::string shown(cmd.substr(0, 64));
    return error(fmt::format("unknown command '{}'; try 'help'", shown));
  }
  const std::size_t nargs = words.size() - 1;
  std::string why;
  auto& cache = shared.cache;

  if (cmd == "help") {
    if (nargs != 0) return usage(cmd, "");
    return {help_text()};
  }
  if (cmd == "stats") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    return stats_text(shared);
  }
  if (cmd == "top-names") {
    std::size_t n = 10;
    if (words.size() > 2) return usage("top-names", "[N]");
    if (words.size() == 2) {
      const auto v = text::parse_digits(words[1]);
      if (!v || *v < 1 || *v > SpaceSaving::kCounters)
        return usage("top-names", "[N] with N from 1 to 64");
      n = static_cast<std::size_t>(*v);
    }
    return {shared.top_names.text(n)};
  }
  if (cmd == "upstreams") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    std::map<std::string, std::string> extra;
    for (const DnssecServerState& d : shared.dnssec_upstreams.servers())
      extra[d.server.to_string()] = fmt::format("dnssec={}", to_string(d.capability));
    return {upstreams_text(shared.upstream_board, extra)};
  }
  if (cmd == "dnssec") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    return {dnssec_text(shared)};
  }
  if (cmd == "route") {
    if (nargs != 1) return usage(cmd, "NAME");
    auto name = parse_name(words[1], why);
    if (!name) return error(why);
    const auto [routing, upstreams] = shared.routing();
    if (!routing) return {fmt::format("{} default upstreams\n", name->to_text())};
    std::string text = routing->describe(*name, upstreams);
    // The default upstreams a link added are named with it.
    if (text.find(" default upstreams ") != std::string::npos && text.ends_with('\n'))
      text.insert(text.size() - 1, shared.links.default_route_note());
    return {std::move(text)};
  }
  if ((cmd == "link" || cmd == "links") && fleet) return fleet_misplaced();
  if (cmd == "links") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    return {shared.links.text()};
  }
  if (cmd == "link") {
    // Checked whole before anything changes; the server then puts the new table in force
    // (or refuses it, e.g. a server that is this daemon's own address).
    auto c = parse_link_command(words);
    if (!c) return error(c.error());
    LinkTable next = shared.links;
    std::string reply;
    bool changed = false;
    if (auto err = next.apply(c.value(), reply, changed)) return error(*err);
    if (!changed) return {std::move(reply)};
    if (shared.links_changed) {
      if (auto err = shared.links_changed(next, "link " + c->link.name)) return error(*err);
    }
    shared.links = std::move(next);
    return {std::move(reply)};
  }
  if (cmd == "dump") {
    if (nargs > 1) return usage(cmd, "[NAME]");
    std::optional<wire::Name> only;
    if (nargs == 1) {
      only = parse_name(words[1], why);
      if (!only) return error(why);
    }
    return dump(shared, only, now);
  }
  if (fleet && !known->fleet) return fleet_misplaced();
  if (fleet && shared.fleet_control == nullptr)
    return error("--fleet: this hourglassd runs without --redis; nothing was changed");
  fleet::FleetMessage fm;
  // The local change is made first; with --fleet, Redis and the other instances follow.
  auto with_fleet = [&](Output local) -> Output {
    if (!fleet || local.text.starts_with("error:")) return local;
    if (auto err = shared.fleet_control->broadcast(fm)) return error(*err);
    local.text += "fleet: sent to Redis and every instance\n";
    return local;
  };
  if (cmd == "flush") {
    if (nargs > 1) return usage(cmd, "[NAME]  (flush-zone ZONE for a whole zone)");
    if (nargs == 0) {
      fm.op = fleet::FleetOp::FlushAll;
      return with_fleet({fmt::format("flushed {}\n", cache.flush_all())});
    }
    auto name = parse_name(words[1], why);
    if (!name) return error(why);
    fm.op = fleet::FleetOp::FlushName;
    fm.name = name->lowercased();
    return with_fleet({fmt::format("flushed {}\n", cache.flush_name(*name))});
  }
  if (cmd == "flush-zone") {
    if (nargs != 1) return usage(cmd, "ZONE");
    auto zone = parse_name(words[1], why);
    if (!zone) return error(why);
    fm.op = fleet::FleetOp::FlushZone;
    fm.name = zone->lowercased();
    return with_fleet({fmt::format("flushed {}\n", cache.flush_zone(*zone))});
  }
  if (cmd == "ttl-cap") {
    if (nargs != 2) return usage(cmd, "ZONE SECONDS");
    auto zone = parse_name(words[1], why);
    if (!zone) return error(why);
    const auto secs = parse_ttl_arg(words[2], kMaxCapSeconds, why);
    if (!secs) return error(why);
    cache.set_ttl_cap(*zone, *secs, now);
    fm.op = fleet::FleetOp::TtlCap;
    fm.name = zone->lowercased();
    fm.seconds = *secs;
    return with_fleet({fmt::format("ok: ttl-cap {} {}\n", zone->lowercased().to_text(), *secs)});
  }
  if (cmd == "ttl-cap-clear") {
    if (nargs != 1) return usage(cmd, "ZONE");
    auto zone = parse_name(words[1], why);
    if (!zone) return error(why);
    fm.op = fleet::FleetOp::TtlCapClear;
    fm.name = zone->lowercased();
    // With --fleet the cap goes fleet-wide even when this instance had none.
    if (!cache.clear_ttl_cap(*zone) && !fleet)
      return error(fmt::format("no ttl-cap for {}; see ttl-caps", zone->lowercased().to_text()));
    return with_fleet({fmt::format("ok: ttl-cap-clear {}\n", zone->lowercased().to_text())});
  }
  if (cmd == "ttl-caps") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    std::string out;
    for (const auto& [zone, cap] : cache.ttl_caps())
      out += fmt::format("{} {}\n", zone.to_text(), cap);
    if (out.empty()) out = "; no ttl caps\n";
    return {std::move(out)};
  }
  if (cmd == "save") {
    if (nargs != 0) return usage(cmd, "(no arguments)");
    if (shared.config.cache_file.empty())
      return error("no cache file: start hourglassd with --cache-file PATH");
    const auto r = save_cache_file(shared, now);
    if (!r.ok) return error(r.error);
    return {fmt::format("saved {} answers to {}{} ({} bytes)\n", r.entries, r.path,
                        r.diverted.empty() ? std::string() : " (" + r.diverted + ")", r.bytes)};
  }
  if (auto r = rehearsal_command(shared, words, now)) return std::move(*r);
  // A command of the table that no branch above (or rehearsal_command) handles: a bug that
  // tests/resolver/control_commands_test.cc catches.
  return error(fmt::format(
      "'{}' is in the command table but not dispatched (a bug: please report it)", cmd));
}

std::string Control::execute_all(Shared& shared, std::string_view line, MonoTime now) {
  Output o = execute(shared, line, now);
  if (o.more)
    while (o.more(o.text)) {
    }
  return std::move(o.text);
}

Checked<std::unique_ptr<Control>> Control::open(EventLoop& loop, Shared& shared,
                                                const std::string& path) {
  using R = Checked<std::unique_ptr<Control>>;
  const std::string what = "--control " + path;
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sun.sun_path)
    return R::failure(what + ": expected a path of 1 to 107 bytes");
  std::memcpy(sun.sun_path, path.data(), path.size());
  const auto sa = reinterpret_cast<const sockaddr*>(&sun);

  // Something already there: a stale socket from a daemon that did not exit cleanly is
  // replaced; a live one, or a file that is not a socket, is never touched.
  struct stat st = {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return R::failure(what +
                        ": the path exists and is not a socket; remove it or choose "
                        "another --control path");
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (probe < 0)
      return R::failure(what + ": cannot create a unix socket: " + std::strerror(errno));
    const int rc = ::connect(probe, sa, sizeof sun);
    const int err = errno;
    ::close(probe);
    if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
      return R::failure(what +
                        ": another process (another hourglassd?) is listening on it; "
                        "stop that one or choose another --control path");
    if (err != ECONNREFUSED)
      return R::failure(what + ": cannot check the existing socket: " + std::strerror(err));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return R::failure(what + ": cannot remove the stale socket: " + std::strerror(errno));
  } else if (errno != ENOENT) {
    return R::failure(what + ": " + std::strerror(errno));
  }

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return R::failure(what + ": cannot create a unix socket: " + std::strerror(errno));
  // bind() creates the file with 0777 & ~umask: narrow the umask for that call so the socket
  // is never reachable by others, even for an instant (start-up: no other thread makes files).
  const mode_t old_mask = ::umask(0117);
  const int bound = ::bind(fd, sa, sizeof sun);
  const int bind_err = errno;
  ::umask(old_mask);
  if (bound != 0) {
    ::close(fd);
    const std::string hint = bind_err == ENOENT   ? " (does its directory exist?)"
                             : bind_err == EACCES ? " (no permission to create files there)"
                                                  : "";
    return R::failure(what + ": cannot create the socket: " + std::strerror(bind_err) + hint);
  }
  auto fail_after_bind = [&](const std::string& message) {
    ::close(fd);
    ::unlink(path.c_str());
    return R::failure(message);
  };
  // The umask above made it 0660; no chmod(path) afterwards, which would follow a symbolic
  // link swapped in after bind() (in a directory others may write) and open up its target.
  // lstat() follows nothing: what is at the path now must be a socket.
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
    return fail_after_bind(what + ": the socket was replaced right after it was made; make " +
                           "its directory writable by root and hourglassd's user only");
  if (::listen(fd, 16) != 0)
    return fail_after_bind(what + ": cannot listen: " + std::strerror(errno));

  std::unique_ptr<Control> c(new Control(path, st.st_dev, st.st_ino));
  Shared* sh = &shared;
  EventLoop* lp = &loop;
  c->server_ = StreamServer::start(
      loop, fd, StreamServerSettings{.max_request = kMaxLine},
      [sh, lp](std::string_view in, bool full, std::string& out) {
        StreamServer::Reply reply;
        const std::size_t nl = in.find('\n');
        if (nl == std::string_view::npos) {
          if (full) {
            out += fmt::format("error: request line longer than {} bytes\n\n", kMaxLine - 1);
            reply.consumed = in.size();
            reply.close = true;
          }
          return reply;
        }
        std::string_view line = in.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        Output o = execute(*sh, line, lp->now());
        out += o.text;
        if (o.more) {
          reply.more = [more = std::move(o.more)](std::string& text) {
            if (more(text)) return true;
            text += '\n';
            return false;
          };
        } else {
          out += '\n';
        }
        reply.consumed = nl + 1;
        return reply;
      });
  if (!c->server_)
    return fail_after_bind(what + ": cannot watch the socket: " + std::strerror(errno));
  return c;
}

Control::~Control() {
  server_.reset();
  // Remove the file only if it is still ours: an operator may have started another daemon
  // on the same path after moving ours away.
  struct stat st = {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

std::string describe_entry(const cache::Entry& e, MonoTime now, Millis stale_max, bool with_kind) {
  std::string out = fmt::format("{} {} {}", e.qname().to_text(),
                                wire::to_string(static_cast<wire::RRClass>(e.qclass())),
                                wire::to_string(e.qtype()));
  if (e.dnssec_ok()) out += " do";
  if (e.checking_disabled()) out += " cd";
  out += ' ';
  out += wire::to_string(static_cast<wire::RCode>(e.rcode()));
  if (with_kind && e.kind() == cache::AnswerKind::NoData) out += " nodata";
  if (now < e.expires_at()) {
    out += fmt::format(" fresh, expires in {}s", base::whole_seconds(e.expires_at() - now));
  } else {
    out += fmt::format(" stale, expired {}s ago, servable stale for {}s more",
                       base::whole_seconds(now - e.expires_at()),
                       base::whole_seconds(std::max(e.expires_at() + stale_max - now, Millis{0})));
  }
  return out;
}

}  // namespace hg::resolver
