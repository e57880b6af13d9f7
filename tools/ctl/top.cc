#include "tools/ctl/top.h"

#include <fmt/core.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "base/decimal.h"
#include "tools/ctl/client.h"

namespace hg::ctl {

namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ')
      ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool to_u64(std::string_view s, uint64_t& out) {
  const auto v = base::parse_decimal<uint64_t>(s);
  if (v) out = *v;
  return v.has_value();
}

// A name from the daemon, safe to print on a terminal (no escape sequences), at most 60 bytes.
std::string printable(std::string_view name, std::size_t max = 60) {
  std::string out;
  for (const char c : name.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  if (name.size() > max) out += "...";
  return out;
}

double rate(uint64_t a, uint64_t b, double seconds) {
  return b >= a && seconds > 0 ? static_cast<double>(b - a) / seconds : 0.0;
}

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop(int) {
  g_stop = 1;
}

}  // namespace

uint64_t TopSample::get(std::string_view key) const {
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : it->second;
}

TopSample parse_top_sample(std::string_view stats, std::string_view upstreams,
                           std::string_view top_names) {
  TopSample s;
  for (const auto line : lines_of(stats)) {
    const auto w = words_of(line);
    uint64_t v = 0;
    if (w.size() == 2 && to_u64(w[1], v)) s.stats.emplace(std::string(w[0]), v);
  }
  for (const auto line : lines_of(upstreams)) {
    const auto w = words_of(line);
    if (w.empty() || w[0].starts_with(";")) continue;
    TopSample::Upstream u;
    u.name = std::string(w[0]);
    for (std::size_t i = 1; i < w.size(); ++i) {
      const auto eq = w[i].find('=');
      if (eq == std::string_view::npos) continue;
      const auto key = w[i].substr(0, eq), value = w[i].substr(eq + 1);
      if (key == "state") u.state = std::string(value);
      if (key == "srtt_ms") u.srtt_ms = std::string(value);
      if (key == "queries") to_u64(value, u.queries);
      if (key == "timeouts") to_u64(value, u.timeouts);
    }
    s.upstreams.push_back(std::move(u));
  }
  for (const auto line : lines_of(top_names)) {
    if (line.starts_with(";")) {
      s.names_note = std::string(line.substr(std::min<std::size_t>(2, line.size())));
      continue;
    }
    const auto w = words_of(line);
    uint64_t n = 0;
    if (w.size() != 3 || !to_u64(w[2], n)) continue;
    if (w[0] == "busiest") s.busiest.emplace_back(std::string(w[1]), n);
    if (w[0] == "upstream") s.causes.emplace_back(std::string(w[1]), n);
  }
  return s;
}

std::string render_top(const TopSample& a, const TopSample& b, double seconds,
                       const std::string& socket, bool ansi) {
  const std::string bold = ansi ? "\x1b[1m" : "", plain = ansi ? "\x1b[0m" : "";
  auto queries = [](const TopSample& s) {
    return s.get("server.queries_udp") + s.get("server.queries_tcp");
  };
  const uint64_t dh = b.get("server.hits") - std::min(b.get("server.hits"), a.get("server.hits"));
  const uint64_t dm =
      b.get("server.misses") - std::min(b.get("server.misses"), a.get("server.misses"));
  std::string out;
  out += fmt::format("{}hourglass-ctl top{}  {}  every {:.1f}s\n", bold, plain, socket, seconds);
  out += fmt::format(
      "queries/s {:.1f}  hit ratio {}  misses/s {:.1f}  stale/s {:.1f}  servfail/s {:.1f}  "
      "in flight {}\n",
      rate(queries(a), queries(b), seconds),
      dh + dm == 0
          ? std::string("-")
          : fmt::format("{:.1f}%", 100.0 * static_cast<double>(dh) / static_cast<double>(dh + dm)),
      rate(a.get("server.misses"), b.get("server.misses"), seconds),
      rate(a.get("server.stale_answers"), b.get("server.stale_answers"), seconds),
      rate(a.get("server.servfail"), b.get("server.servfail"), seconds), b.get("inflight.queries"));
  out += fmt::format(
      "totals: queries {} hits {} misses {} stale_answers {} servfail {} upstream_queries {}\n",
      queries(b), b.get("server.hits"), b.get("server.misses"), b.get("server.stale_answers"),
      b.get("server.servfail"), b.get("server.upstream_queries"));
  out += fmt::format("\n{}{:<40} {:<8} {:>8} {:>7} {:>10}{}\n", bold, "upstream", "state",
                     "srtt_ms", "loss", "queries/s", plain);
  for (const auto& u : b.upstreams) {
    const auto prev = std::find_if(a.upstreams.begin(), a.upstreams.end(),
                                   [&](const auto& x) { return x.name == u.name; });
    const uint64_t q0 = prev == a.upstreams.end() ? 0 : prev->queries;
    const uint64_t t0 = prev == a.upstreams.end() ? 0 : prev->timeouts;
    const uint64_t dq = u.queries >= q0 ? u.queries - q0 : 0;
    const uint64_t dt = u.timeouts >= t0 ? u.timeouts - t0 : 0;
    const std::string loss =
        dq == 0 ? std::string("-")
                : fmt::format("{:.1f}%", 100.0 * static_cast<double>(std::min(dt, dq)) /
                                             static_cast<double>(dq));
    out += fmt::format("{:<40} {:<8} {:>8} {:>7} {:>10.1f}\n", printable(u.name), u.state,
                       u.srtt_ms, loss, rate(q0, u.queries, seconds));
  }
  out += fmt::format("\n{}{:<46} {:>8}   {:<46} {:>8}{}\n", bold, "busiest names", "queries",
                     "names causing upstream queries", "queries", plain);
  const std::size_t rows = std::max(b.busiest.size(), b.causes.size());
  for (std::size_t i = 0; i < rows; ++i) {
    std::string left(55, ' '), right;
    if (i < b.busiest.size())
      left = fmt::format("{:<46} {:>8}", printable(b.busiest[i].first), b.busiest[i].second);
    if (i < b.causes.size())
      right = fmt::format("   {:<46} {:>8}", printable(b.causes[i].first), b.causes[i].second);
    out += left + right + "\n";
  }
  if (!b.names_note.empty()) out += "; " + printable(b.names_note, 300) + "\n";
  return out;
}

int run_top(const std::string& socket, double timeout_s, const std::vector<std::string>& words) {
  bool once = false;
  double interval = 1.0;
  unsigned names = 10;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--once") {
      once = true;
    } else if ((w == "--interval" || w == "--names") && i + 1 < words.size()) {
      const std::string& v = words[++i];
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      const bool ok = end != v.c_str() && *end == '\0';
      if (w == "--interval") {
        if (!ok || !(d >= 0.1 && d <= 3600)) {
          fmt::print(stderr,
                     "hourglass-ctl top: --interval {}: expected seconds from 0.1 to 3600\n", v);
          return 2;
        }
        interval = d;
      } else {
        if (!ok || !(d >= 1 && d <= 100) || d != static_cast<unsigned>(d)) {
          fmt::print(stderr, "hourglass-ctl top: --names {}: expected a count from 1 to 100\n", v);
          return 2;
        }
        names = static_cast<unsigned>(d);
      }
    } else {
      fmt::print(stderr,
                 "hourglass-ctl top: unexpected '{}'; usage: top [--once] [--interval SECONDS] "
                 "[--names N]\n",
                 w);
      return 2;
    }
  }
  using Clock = std::chrono::steady_clock;
  auto sample = [&](TopSample& out, Clock::time_point& at) -> bool {
    const Reply st = exchange(socket, "stats", timeout_s);
    at = Clock::now();
    if (st.status != 0) {
      fmt::print(stderr, "hourglass-ctl top: {}\n", st.status == 2 ? st.error : st.text);
      return false;
    }
    const Reply up = exchange(socket, "upstreams", timeout_s);
    const Reply tn = exchange(socket, fmt::format("top-names {}", names), timeout_s);
    out = parse_top_sample(st.text, up.status == 0 ? up.text : "", tn.status == 0 ? tn.text : "");
    if (tn.status != 0) out.names_note = "this hourglassd has no top-names command";
    return true;
  };
  auto wait = [](double seconds) {
    int left_ms = static_cast<int>(seconds * 1000);
    while (left_ms > 0 && g_stop == 0) {
      const int step = std::min(left_ms, 100);
      ::poll(nullptr, 0, step);
      left_ms -= step;
    }
  };
  TopSample a, b;
  Clock::time_point ta, tb;
  if (!sample(a, ta)) return 2;
  if (once) {
    wait(interval);
    if (!sample(b, tb)) return 2;
    const std::string view =
        render_top(a, b, std::chrono::duration<double>(tb - ta).count(), socket, false);
    std::fwrite(view.data(), 1, view.size(), stdout);
    return 0;
  }
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  std::fputs(tty ? "\x1b[?25l" : "", stdout);  // hide the cursor
  int status = 0;
  while (g_stop == 0) {
    wait(interval);
    if (g_stop != 0) break;
    if (!sample(b, tb)) {
      status = 2;
      break;
    }
    const std::string view =
        render_top(a, b, std::chrono::duration<double>(tb - ta).count(), socket, tty);
    std::fputs(tty ? "\x1b[H\x1b[2J" : "\n", stdout);
    std::fwrite(view.data(), 1, view.size(), stdout);
    std::fflush(stdout);
    a = std::move(b);
    ta = tb;
  }
  std::fputs(tty ? "\x1b[?25h" : "", stdout);
  return status;
}

}  // namespace hg::ctl
