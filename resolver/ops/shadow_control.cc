#include "resolver/ops/shadow_control.h"

#include <arpa/inet.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <unordered_set>

#include "base/duration.h"
#include "base/wall_clock.h"
#include "cache/shadow.h"
#include "wire/message.h"
#include "wire/owned.h"
#include "wire/print.h"

namespace hg::resolver {

namespace {

constexpr int64_t kMaxShadowSeconds = 2147483647;  // RFC 2181 §8: TTLs are 31-bit

Control::Output error(const std::string& message) {
  return {"error: " + message + "\n"};
}

std::optional<wire::Name> parse_name(std::string_view text, std::string& why) {
  auto n = wire::Name::from_text(text);
  if (n) return n.value();
  why = fmt::format("'{}' is not a domain name ({} at offset {})", text.substr(0, 300),
                    wire::to_string(n.error().code), n.error().offset);
  return std::nullopt;
}

/// The wall-clock time of monotonic instant `t`, ISO 8601 UTC to the second.
std::string wall_time(MonoTime t, MonoTime now) {
  const auto wall =
      base::wall_now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(t - now);
  const std::time_t tt = std::chrono::system_clock::to_time_t(wall);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double per_second(uint64_t n, Millis over) {
  if (over.count() <= 0) return 0.0;
  return static_cast<double>(n) * 1000.0 / static_cast<double>(over.count());
}

// --- shadow -----------------------------------------------------------------------------

Control::Output shadow_report(Shared& shared, MonoTime now) {
  const auto zones = shared.shadow.zone_stats();
  const cache::ShadowTableStats t = shared.shadow.stats();
  std::string out;
  if (zones.empty()) {
    out += "; no shadow zones; start one with: shadow set ZONE SECONDS\n";
  } else {
    out += fmt::format("; {:<30} {:>6} {:>8} {:>10} {:>8} {:>8} {:>10} {:>9} {:>6} {:>8} {:>9}\n",
                       "ZONE", "TTL", "SINCE", "QUERIES", "REAL", "REAL/S", "PROJECTED", "PROJ/S",
                       "MULT", "REAL-HIT", "PROJ-HIT");
    for (const auto& z : zones) {
      const Millis over = now - z.since;
      out += fmt::format(
          "{:<32} {:>6} {:>7}s {:>10} {:>8} {:>8.3f} {:>10} {:>9.3f} {:>6.2f} {:>8.3f} {:>9.3f}\n",
          z.zone.to_text(), z.seconds, base::whole_seconds(over), z.queries, z.real_upstream,
          per_second(z.real_upstream, over), z.projected_upstream(),
          per_second(z.projected_upstream(), over), z.multiplier(), z.real_hit_ratio(),
          z.projected_hit_ratio());
    }
  }
  out += fmt::format("; shadow table: {} entries, {} of {} bytes, {} evictions\n", t.entries,
                     t.bytes, t.capacity_bytes, t.evictions);
  return {std::move(out)};
}

Control::Output shadow_command(Shared& shared, const std::vector<std::string_view>& words,
                               MonoTime now) {
  const std::size_t nargs = words.size() - 1;
  constexpr std::string_view kUsage =
      "usage: shadow | shadow list | shadow set ZONE SECONDS | shadow clear ZONE";
  if (nargs == 0) return shadow_report(shared, now);
  const std::string_view sub = words[1];
  std::string why;
  if (sub == "list") {
    if (nargs != 1) return error(std::string(kUsage));
    std::string out;
    for (const auto& [zone, secs] : shared.shadow.list())
      out += fmt::format("{} {}\n", zone.to_text(), secs);
    if (out.empty()) out = "; no shadow zones\n";
    return {std::move(out)};
  }
  if (sub == "set") {
    if (nargs != 3) return error(std::string(kUsage));
    auto zone = parse_name(words[2], why);
    if (!zone) return error(why);
    const auto secs = parse_ttl_arg(words[3], kMaxShadowSeconds, why);
    if (!secs) return error(why);
    if (!shared.shadow.set(*zone, *secs, now))
      return error(
          fmt::format("{} shadow zones are set, the most there can be; clear one first "
                      "(shadow clear ZONE)",
                      cache::ShadowTable::kMaxZones));
    return {fmt::format("ok: shadow-ttl {} {}\n", zone->lowercased().to_text(), *secs)};
  }
  if (sub == "clear") {
    if (nargs != 2) return error(std::string(kUsage));
    auto zone = parse_name(words[2], why);
    if (!zone) return error(why);
    if (!shared.shadow.clear(*zone))
      return error(fmt::format("no shadow zone {}; see shadow list", zone->lowercased().to_text()));
    return {fmt::format("ok: shadow clear {}\n", zone->lowercased().to_text())};
  }
  return error(std::string(kUsage));
}

// --- drain ------------------------------------------------------------------------------

std::string lower_wire(const wire::Name& n) {
  const wire::Name l = n.lowercased();
  const auto w = l.wire();
  return std::string(w.begin(), w.end());
}

struct DrainState {
  struct Found {
    std::shared_ptr<const cache::Entry> entry;
    std::vector<std::pair<std::string, std::string>> cnames;  // owner → target, lowercased wire
    bool included = false;
    bool old = false;
  };
  enum class Phase { Scan, Resolve, Print, Done };

  Shared* shared = nullptr;
  wire::Name name;
  std::string name_key;
  std::vector<OldAddress> old;
  bool flush = false;
  MonoTime now{};
  Millis stale_max{};
  std::vector<std::shared_ptr<const cache::Entry>> entries;
  std::size_t next = 0;
  std::vector<Found> found;
  Phase phase = Phase::Scan;
  std::size_t printed = 0;
  std::size_t shown = 0;
  std::size_t old_count = 0;
  std::size_t flushed = 0;
  std::optional<MonoTime> last_fresh;  // latest expiry among the copies the summary is about
  std::optional<MonoTime> last_stale;

  bool is_old(const wire::OwnedRecord& rr) const {
    for (const OldAddress& o : old) {
      if (rr.type != o.type) continue;
      if (const auto* a = std::get_if<wire::RdataA>(&rr.rdata)) {
        if (std::equal(a->address.begin(), a->address.end(), o.bytes.begin())) return true;
      } else if (const auto* a6 = std::get_if<wire::RdataAAAA>(&rr.rdata)) {
        if (std::equal(a6->address.begin(), a6->address.end(), o.bytes.begin())) return true;
      }
    }
    return false;
  }

  /// The entry's answer records as at `now`, or nullopt if they do not decode.
  std::optional<wire::OwnedMessage> decode(const cache::Entry& e) const {
    const std::vector<uint8_t> bytes = e.to_wire(now);
    wire::Message m;
    if (!m.parse(bytes, wire::ParseMode::Strict)) return std::nullopt;
    auto owned = wire::to_owned(m);
    if (!owned) return std::nullopt;
    return std::move(owned.value());
  }

  void scan_one(const std::shared_ptr<const cache::Entry>& e) {
    if (e->qclass() != 1) return;
    const auto t = e->qtype();
    if (t != wire::RRType::A && t != wire::RRType::AAAA && t != wire::RRType::CNAME) return;
    if (now >= e->expires_at() + stale_max) return;  // past its stale window: never served
    const bool own = t != wire::RRType::CNAME && e->qname() == name;
    if (!own && e->ancount() == 0) return;
    auto msg = decode(*e);
    if (!msg) return;
    Found f;
    f.entry = e;
    f.included = own;
    for (const auto& rr : msg->answer) {
      if (rr.type == wire::RRType::CNAME) {
        if (const auto* n = std::get_if<wire::RdataName>(&rr.rdata))
          f.cnames.emplace_back(lower_wire(rr.owner), lower_wire(n->name));
      }
      if (is_old(rr)) f.old = true;
    }
    if (f.included || !f.cnames.empty()) found.push_back(std::move(f));
  }

  /// Upward closure: names known to lead to NAME, entries through them.
  void resolve() {
    std::unordered_set<std::string> leads{name_key};
    for (bool changed = true; changed;) {
      changed = false;
      for (Found& f : found) {
        // Within one answer, follow its CNAMEs backwards until nothing new.
        for (bool inner = true; inner;) {
          inner = false;
          for (const auto& [owner, target] : f.cnames) {
            if (leads.contains(target) && !leads.contains(owner)) {
              leads.insert(owner);
              inner = changed = true;
            }
          }
        }
        if (f.included) continue;
        for (const auto& edge : f.cnames) {
          if (leads.contains(edge.second)) {
            f.included = true;
            changed = true;
            break;
          }
        }
      }
    }
    std::erase_if(found, [](const Found& f) { return !f.included; });
  }

  void print_one(const Found& f, std::string& out) {
    const cache::Entry& e = *f.entry;
    ++shown;
    const bool counts = old.empty() || f.old;  // what the summary's times are about
    if (f.old) ++old_count;
    if (counts) {
      if (!last_fresh || e.expires_at() > *last_fresh) last_fresh = e.expires_at();
      const MonoTime stale_end = e.expires_at() + stale_max;
      if (!last_stale || stale_end > *last_stale) last_stale = stale_end;
    }
    bool removed = false;
    if (f.old && flush) {
      removed = shared->cache.erase_entry(e);
      if (removed) ++flushed;
    }
    out += f.old ? "; [old] " : "; ";
    out += describe_entry(e, now, stale_max, false);
    out += removed ? "; flushed\n" : "\n";
    auto msg = decode(e);
    if (!msg) {
      out += "; (records cannot be decoded)\n";
      return;
    }
    for (const auto& rr : msg->answer)
      out += wire::record_to_text(rr) + (is_old(rr) ? "\t; old\n" : "\n");
  }

  void summary(std::string& out) {
    const std::string n = name.lowercased().to_text();
    out += fmt::format("; {} {} to {}", shown, shown == 1 ? "entry leads" : "entries lead", n);
    if (!old.empty()) {
      std::string list;
      for (const auto& o : old)
        list += (list.empty() ? "" : ", ") + o.text;
      out += fmt::format("; {} {} an old address ({})", old_count,
                         old_count == 1 ? "holds" : "hold", list);
    }
    out += '\n';
    const char* what = old.empty() ? "last copy" : "last old copy";
    if (!last_fresh) {
      if (!old.empty()) out += "; no old copy in this cache\n";
      if (flush) out += "; flushed 0 entries holding an old address\n";
      return;
    }
    if (*last_fresh > now) {
      out += fmt::format("; {} served fresh until {} (in {}s)\n", what, wall_time(*last_fresh, now),
                         base::whole_seconds(*last_fresh - now));
    } else {
      out += fmt::format("; {} no longer served fresh (expired {}s ago)\n", what,
                         base::whole_seconds(now - *last_fresh));
    }
    if (*last_stale > now) {
      out += fmt::format(
          "; worst case, served stale while the upstream fails (stale-max {}s), until {} (in "
          "{}s)\n",
          base::whole_seconds(stale_max), wall_time(*last_stale, now),
          base::whole_seconds(*last_stale - now));
    }
    if (flush) {
      out += fmt::format("; flushed {} {} holding an old address\n", flushed,
                         flushed == 1 ? "entry" : "entries");
      if (flushed == old_count) out += "; no old copy is left in this cache\n";
    }
  }

  /// One chunk of work; false when the reply is complete.
  bool step(std::string& out) {
    switch (phase) {
      case Phase::Scan: {
        const std::size_t end = std::min(entries.size(), next + kDrainChunk);
        for (; next < end; ++next) {
          scan_one(entries[next]);
          entries[next].reset();
        }
        if (next == entries.size()) {
          entries.clear();
          entries.shrink_to_fit();
          phase = Phase::Resolve;
        }
        return true;
      }
      case Phase::Resolve:
        resolve();
        std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
          return a.entry->expires_at() > b.entry->expires_at();
        });
        phase = Phase::Print;
        return true;
      case Phase::Print: {
        const std::size_t end = std::min(found.size(), printed + kDrainChunk / 4);
        for (; printed < end; ++printed)
          print_one(found[printed], out);
        if (printed < found.size()) return true;
        summary(out);
        phase = Phase::Done;
        return false;
      }
      case Phase::Done:
        return false;
    }
    return false;
  }
};

Control::Output drain_command(Shared& shared, const std::vector<std::string_view>& words,
                              MonoTime now) {
  constexpr std::string_view kUsage = "usage: drain NAME [--old RDATA]... [--flush-old]";
  auto st = std::make_shared<DrainState>();
  st->shared = &shared;
  st->now = now;
  st->stale_max = shared.cache.settings().stale_max;
  bool have_name = false;
  std::string why;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (w == "--flush-old") {
      st->flush = true;
    } else if (w == "--old" || w.starts_with("--old=")) {
      std::string_view value;
      if (w == "--old") {
        if (i + 1 >= words.size()) return error("--old needs an address; " + std::string(kUsage));
        value = words[++i];
      } else {
        value = w.substr(6);
      }
      auto o = parse_old_address(value);
      if (!o) return error(o.error());
      if (st->old.size() >= 64) return error("at most 64 --old addresses");
      st->old.push_back(o.value());
    } else if (w.starts_with("-")) {
      return error(fmt::format("unknown option '{}'; {}", w.substr(0, 64), kUsage));
    } else if (!have_name) {
      auto n = parse_name(w, why);
      if (!n) return error(why);
      st->name = *n;
      have_name = true;
    } else {
      return error(std::string(kUsage));
    }
  }
  if (!have_name) return error(std::string(kUsage));
  if (st->flush && st->old.empty())
    return error(
        "--flush-old needs at least one --old address: it removes the entries that "
        "hold one");
  st->name_key = lower_wire(st->name);
  st->entries = shared.cache.snapshot();
  Control::Output o;
  o.text = fmt::format("; drain {}{}\n", st->name.lowercased().to_text(),
                       st->flush ? " --flush-old" : "");
  o.more = [st](std::string& out) { return st->step(out); };
  return o;
}

}  // namespace

Checked<OldAddress> parse_old_address(std::string_view text) {
  using R = Checked<OldAddress>;
  const std::string shown(text.substr(0, 80));
  auto bad = [&] {
    return R::failure(
        fmt::format("--old '{}': expected an address, optionally typed: 192.0.2.1, A=192.0.2.1, "
                    "AAAA=2001:db8::1",
                    shown));
  };
  OldAddress o;
  std::optional<wire::RRType> want;
  if (const auto eq = text.find('='); eq != std::string_view::npos) {
    std::string type(text.substr(0, eq));
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (type == "A") {
      want = wire::RRType::A;
    } else if (type == "AAAA") {
      want = wire::RRType::AAAA;
    } else {
      return bad();
    }
    text = text.substr(eq + 1);
  }
  if (text.empty() || text.size() > 64) return bad();
  const std::string addr(text);
  if (want != wire::RRType::AAAA && ::inet_pton(AF_INET, addr.c_str(), o.bytes.data()) == 1) {
    o.type = wire::RRType::A;
  } else if (want != wire::RRType::A && ::inet_pton(AF_INET6, addr.c_str(), o.bytes.data()) == 1) {
    o.type = wire::RRType::AAAA;
  } else {
    return bad();
  }
  o.text = fmt::format("{} {}", o.type == wire::RRType::A ? "A" : "AAAA", addr);
  return o;
}

std::optional<Control::Output> rehearsal_command(Shared& shared,
                                                 const std::vector<std::string_view>& words,
                                                 MonoTime now) {
  if (words.empty()) return std::nullopt;
  if (words[0] == "shadow") return shadow_command(shared, words, now);
  if (words[0] == "drain") return drain_command(shared, words, now);
  return std::nullopt;
}

std::string shadow_stats_lines(const Shared& shared) {
  const cache::ShadowTableStats t = shared.shadow.stats();
  std::string out;
  out += fmt::format("shadow.zones {}\n", t.zones);
  out += fmt::format("shadow.entries {}\n", t.entries);
  out += fmt::format("shadow.bytes {}\n", t.bytes);
  out += fmt::format("shadow.capacity_bytes {}\n", t.capacity_bytes);
  out += fmt::format("shadow.evictions {}\n", t.evictions);
  for (const auto& z : shared.shadow.zone_stats()) {
    const std::string p = "shadow[" + z.zone.to_text() + "].";
    out += fmt::format("{}queries {}\n", p, z.queries);
    out += fmt::format("{}real_upstream {}\n", p, z.real_upstream);
    out += fmt::format("{}projected_upstream {}\n", p, z.projected_upstream());
    out += fmt::format("{}projected_hit_ratio {:.4f}\n", p, z.projected_hit_ratio());
  }
  return out;
}

}  // namespace hg::resolver
