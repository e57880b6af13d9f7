#include "resolver/upstream/upstream_board.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace hg::resolver {

void UpstreamBoard::publish(std::shared_ptr<const UpstreamTable> table) {
  std::lock_guard lock(mu_);
  for (auto& t : tables_) {
    if (t->worker == table->worker) {
      t = std::move(table);
      return;
    }
  }
  tables_.push_back(std::move(table));
}

std::vector<std::shared_ptr<const UpstreamTable>> UpstreamBoard::snapshot() const {
  std::lock_guard lock(mu_);
  return tables_;
}

namespace {

uint64_t get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}

struct Summary {
  uint64_t queries = 0, answers = 0, late = 0, timeouts = 0, failures = 0, edns_rejections = 0,
           edns_fallbacks = 0, case_mismatches = 0, case_fallbacks = 0, case_forgeries = 0,
           truncated = 0, probes = 0;
  uint64_t spurious = 0, needed = 0, withheld = 0, wrong_port = 0, wrong_id = 0, wrong_question = 0,
           wrong_source = 0, socket_errors = 0, reclaimed = 0, ad_cleared = 0;
  uint64_t tls_handshakes = 0, tls_resumptions = 0, tls_reused = 0, tls_verify_failures = 0,
           tls_connection_failures = 0;
  const UpstreamServerStats* state = nullptr;  // the worker with the most answers
  bool tls_verified = false;                   // a worker's last TLS attempt succeeded
  bool tls_auth_failed = false;                // ... was refused (certificate or pin)
  uint64_t state_answers = 0;
};

// Servers in the order the first table lists them, then any only other workers have.
std::vector<std::pair<std::string, Summary>> summarise(const UpstreamBoard& board) {
  std::vector<std::pair<std::string, Summary>> out;
  for (const auto& table : board.snapshot()) {
    for (const auto& s : table->servers) {
      const std::string key = s->server.to_string();
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == key; });
      if (it == out.end()) {
        out.emplace_back(key, Summary{});
        it = out.end() - 1;
      }
      Summary& m = it->second;
      const uint64_t answers = get(s->answers);
      m.queries += get(s->queries);
      m.answers += answers;
      m.late += get(s->late_answers);
      m.timeouts += get(s->timeouts);
      m.failures += get(s->failures);
      m.edns_rejections += get(s->edns_rejections);
      m.edns_fallbacks += get(s->edns_fallbacks);
      m.case_mismatches += get(s->case_mismatches);
      m.case_fallbacks += get(s->case_fallbacks);
      m.case_forgeries += get(s->case_forgeries);
      m.truncated += get(s->truncated);
      m.probes += get(s->probes);
      m.spurious += get(s->spurious_retransmissions);
      m.needed += get(s->needed_retransmissions);
      m.withheld += get(s->retransmissions_withheld);
      m.wrong_port += get(s->dropped_wrong_port);
      m.wrong_id += get(s->dropped_wrong_id);
      m.wrong_question += get(s->dropped_wrong_question);
      m.wrong_source += get(s->dropped_wrong_source);
      m.socket_errors += get(s->socket_errors);
      m.reclaimed += get(s->sockets_reclaimed);
      m.ad_cleared += get(s->ad_cleared);
      m.tls_handshakes += get(s->tls_handshakes);
      m.tls_resumptions += get(s->tls_resumptions);
      m.tls_reused += get(s->tls_reused);
      m.tls_verify_failures += get(s->tls_verify_failures);
      m.tls_connection_failures += get(s->tls_connection_failures);
      const auto last = static_cast<TlsOutcome>(s->tls_last.load(std::memory_order_relaxed));
      m.tls_verified |= last == TlsOutcome::Verified;
      m.tls_auth_failed |= last == TlsOutcome::AuthFailed;
      if (m.state == nullptr || answers > m.state_answers) {
        m.state = s.get();
        m.state_answers = answers;
      }
    }
  }
  return out;
}

std::string ms(int64_t us) {
  return us < 0 ? std::string("-") : fmt::format("{:.1f}", static_cast<double>(us) / 1000.0);
}

}  // namespace

std::string upstreams_text(const UpstreamBoard& board,
                           const std::map<std::string, std::string>& extra) {
  std::string out;
  for (const auto& [name, m] : summarise(board)) {
    const UpstreamServerStats& s = *m.state;
    // A TLS server no worker has a verified connection to, and whose last handshake some
    // worker had refused, answers nothing whatever its RTT says: "auth-failed", not "up".
    const char* state = s.suspect.load() ? "suspect" : "up";
    if (s.tls.load() && !m.tls_verified && m.tls_auth_failed) state = "auth-failed";
    out += fmt::format(
        "{} state={} srtt_ms={} rttvar_ms={} rto_ms={} edns={} 0x20={} queries={} answers={} "
        "late_answers={} timeouts={} failures={} edns_rejections={} edns_fallbacks={} "
        "case_mismatches={} case_fallbacks={} case_forgeries={} truncated={} probes={}\n",
        name, state, ms(s.srtt_us.load()),
        s.srtt_us.load() < 0 ? std::string("-") : ms(s.rttvar_us.load()), ms(s.rto_us.load()),
        s.edns.load() ? "yes" : "no", s.use_0x20.load() ? "on" : "off", m.queries, m.answers,
        m.late, m.timeouts, m.failures, m.edns_rejections, m.edns_fallbacks, m.case_mismatches,
        m.case_fallbacks, m.case_forgeries, m.truncated, m.probes);
    out.pop_back();  // the path and the drops, on the same line
    out += fmt::format(
        " loss={:.2f}% retransmit_wait_ms={} spurious_retransmissions={} "
        "needed_retransmissions={} retransmissions_withheld={} dropped_wrong_port={} "
        "dropped_wrong_id={} dropped_wrong_question={} dropped_wrong_source={} socket_errors={} "
        "sockets_reclaimed={} ad_cleared={}\n",
        static_cast<double>(s.loss_ppm.load()) / 1e4, ms(s.patience_us.load()), m.spurious,
        m.needed, m.withheld, m.wrong_port, m.wrong_id, m.wrong_question, m.wrong_source,
        m.socket_errors, m.reclaimed, m.ad_cleared);
    if (s.tls.load()) {  // DNS over TLS: the connection's story, on the same line
      out.pop_back();
      out += fmt::format(
          " transport=tls tls_handshakes={} tls_resumptions={} tls_reused_queries={} "
          "tls_verify_failures={} tls_connection_failures={}\n",
          m.tls_handshakes, m.tls_resumptions, m.tls_reused, m.tls_verify_failures,
          m.tls_connection_failures);
    }
    if (auto x = extra.find(name); x != extra.end()) {
      out.pop_back();
      out += " " + x->second + "\n";
    }
  }
  if (out.empty()) out = "; no upstream servers\n";
  return out;
}

std::string upstreams_metrics(const UpstreamBoard& board) {
  const auto servers = summarise(board);
  std::string out;
  auto family = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& [server, m] : servers)
      out += fmt::format("{}{{server=\"{}\"}} {}\n", name, server, value(m));
  };
  family("hourglass_upstream_server_queries_total", "counter",
         "Queries sent to the server, retransmissions included.",
         [](const Summary& m) { return m.queries; });
  family("hourglass_upstream_server_answers_total", "counter",
         "Usable answers from the server (late ones included).",
         [](const Summary& m) { return m.answers; });
  family("hourglass_upstream_server_timeouts_total", "counter",
         "Queries to the server whose retransmission timer expired.",
         [](const Summary& m) { return m.timeouts; });
  family("hourglass_upstream_server_failures_total", "counter",
         "SERVFAIL, REFUSED, NOTIMP or unreachable from the server.",
         [](const Summary& m) { return m.failures; });
  family("hourglass_upstream_server_edns_rejections_total", "counter",
         "Queries with EDNS the server rejected (FORMERR/NOTIMP/SERVFAIL without OPT, BADVERS).",
         [](const Summary& m) { return m.edns_rejections; });
  family("hourglass_upstream_server_edns_fallbacks_total", "counter",
         "Times the server was marked as not supporting EDNS.",
         [](const Summary& m) { return m.edns_fallbacks; });
  family("hourglass_upstream_server_case_mismatches_total", "counter",
         "Replies dropped because the 0x20 letter case of the name was wrong.",
         [](const Summary& m) { return m.case_mismatches; });
  family("hourglass_upstream_server_case_fallbacks_total", "counter",
         "Times 0x20 was switched off for the server (it does not echo the case).",
         [](const Summary& m) { return m.case_fallbacks; });
  family("hourglass_upstream_server_case_forgeries_total", "counter",
         "Wrong-case replies shown forged: asked again over TCP, the server echoed the case.",
         [](const Summary& m) { return m.case_forgeries; });
  family("hourglass_upstream_server_spurious_retransmissions_total", "counter",
         "Retransmissions made needless by a later answer to an earlier copy (a slow server).",
         [](const Summary& m) { return m.spurious; });
  family("hourglass_upstream_server_needed_retransmissions_total", "counter",
         "Retransmissions answered while every earlier copy went unanswered (loss).",
         [](const Summary& m) { return m.needed; });
  family("hourglass_upstream_server_retransmissions_withheld_total", "counter",
         "Retransmissions not sent: the query had as many copies as the path's loss warrants.",
         [](const Summary& m) { return m.withheld; });
  family("hourglass_upstream_server_dropped_wrong_port_total", "counter",
         "Replies dropped: the ID of another query to the server, arriving on this one's port.",
         [](const Summary& m) { return m.wrong_port; });
  family("hourglass_upstream_server_dropped_wrong_id_total", "counter",
         "Replies dropped: an ID no query to the server has.",
         [](const Summary& m) { return m.wrong_id; });
  family("hourglass_upstream_server_dropped_wrong_question_total", "counter",
         "Replies dropped: not a response, or not to the question asked.",
         [](const Summary& m) { return m.wrong_question; });
  family("hourglass_upstream_server_dropped_wrong_source_total", "counter",
         "Datagrams dropped: sent to a query's port from another address or port than the "
         "server's.",
         [](const Summary& m) { return m.wrong_source; });
  family("hourglass_upstream_server_socket_errors_total", "counter",
         "Queries for which no socket of their own could be opened.",
         [](const Summary& m) { return m.socket_errors; });
  family("hourglass_upstream_server_sockets_reclaimed_total", "counter",
         "Query sockets closed early to stay within the socket budget.",
         [](const Summary& m) { return m.reclaimed; });
  family("hourglass_upstream_server_ad_cleared_total", "counter",
         "Answers whose AD bit was cleared: the server is not an authenticated one named by "
         "--trust-ad.",
         [](const Summary& m) { return m.ad_cleared; });
  family("hourglass_upstream_server_tls_handshakes_total", "counter",
         "TLS connections opened to the server (DNS over TLS; 0 for a plain server).",
         [](const Summary& m) { return m.tls_handshakes; });
  family("hourglass_upstream_server_tls_resumptions_total", "counter",
         "TLS connections to the server that resumed a session.",
         [](const Summary& m) { return m.tls_resumptions; });
  family("hourglass_upstream_server_tls_reused_queries_total", "counter",
         "Queries written on a TLS connection that had carried one before.",
         [](const Summary& m) { return m.tls_reused; });
  family("hourglass_upstream_server_tls_verify_failures_total", "counter",
         "TLS connections refused: the certificate or the key pin did not verify.",
         [](const Summary& m) { return m.tls_verify_failures; });
  family("hourglass_upstream_server_tls_connection_failures_total", "counter",
         "TLS connections that could not be made or were lost with queries on them.",
         [](const Summary& m) { return m.tls_connection_failures; });
  family("hourglass_upstream_server_loss_ratio", "gauge",
         "Estimated share of datagrams lost on the path to and from the server.",
         [](const Summary& m) { return static_cast<double>(m.state->loss_ppm.load()) / 1e6; });
  family("hourglass_upstream_server_retransmit_wait_microseconds", "gauge",
         "How long a new query to the server waits before its first retransmission.",
         [](const Summary& m) { return m.state->patience_us.load(); });
  family("hourglass_upstream_server_srtt_microseconds", "gauge",
         "Smoothed round-trip time (-1 before the first sample).",
         [](const Summary& m) { return m.state->srtt_us.load(); });
  family("hourglass_upstream_server_rto_microseconds", "gauge", "Current retransmission timeout.",
         [](const Summary& m) { return m.state->rto_us.load(); });
  family("hourglass_upstream_server_edns", "gauge", "1 when queries to the server carry EDNS.",
         [](const Summary& m) { return m.state->edns.load() ? 1 : 0; });
  family("hourglass_upstream_server_0x20", "gauge", "1 when queries to the server use 0x20.",
         [](const Summary& m) { return m.state->use_0x20.load() ? 1 : 0; });
  family("hourglass_upstream_server_suspect", "gauge",
         "1 when the server timed out or failed repeatedly and only gets probes.",
         [](const Summary& m) { return m.state->suspect.load() ? 1 : 0; });
  return out;
}

}  // namespace hg::resolver
