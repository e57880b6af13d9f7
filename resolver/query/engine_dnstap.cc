// The daemon's dnstap hooks: which messages are logged where. Reached only when --dnstap is
// set (QueryEngine::on_query and deliver() test one pointer), so the hit path without dnstap
// pays one branch.
//
//   CLIENT_QUERY       every query received and not dropped (the bytes as received)
//   CLIENT_RESPONSE    every answer sent: hits, misses, stale, errors (the bytes as sent);
//                      an answer sent while its query is handled (a hit, an error) has
//                      response_time = query_time (one clock reading), a later one its own
//   FORWARDER_QUERY    every query sent upstream, misses and prefetches (with c-ares's ID)
//   FORWARDER_RESPONSE every upstream answer (time of the query and of the answer)
#include <cstring>

#include "base/wall_clock.h"
#include "resolver/query/query_engine.h"
#include "resolver/tap/dnstap_writer.h"

namespace hg::resolver {

namespace {

constexpr std::size_t kMaxUpstreamQuery = 12 + 255 + 4 + 11;

}  // namespace

QueryEngine::Outcome QueryEngine::on_query_tapped(std::span<const uint8_t> packet,
                                                  const sockaddr* peer, const Route& route,
                                                  std::span<uint8_t> out) {
  tap_query_ns_ = base::wall_count();
  dnstap::Message m;
  m.type = dnstap::MessageType::ClientQuery;
  m.protocol = route.is_tcp ? dnstap::Protocol::Tcp : dnstap::Protocol::Udp;
  dnstap_set_query_peer(m, peer);
  m.query_time = dnstap_time(tap_query_ns_);
  m.query_message = packet;
  tap_write(m);
  const Outcome res = handle(packet, peer, route, out);
  if (res.size > 0) {
    m.type = dnstap::MessageType::ClientResponse;
    m.query_message = {};
    // Answered while the query was handled (a hit, an error), microseconds after it was
    // read: the query's clock reading serves as the response time too, one reading per hit.
    m.response_time = m.query_time;
    m.response_message = std::span<const uint8_t>(out.data(), res.size);
    tap_write(m);
  }
  tap_query_ns_ = 0;
  return res;
}

void QueryEngine::tap_response(const Waiter& w, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  dnstap::Message m;
  m.type = dnstap::MessageType::ClientResponse;
  m.protocol = w.route.is_tcp ? dnstap::Protocol::Tcp : dnstap::Protocol::Udp;
  std::shared_ptr<TcpConnection> conn;
  if (w.route.is_tcp) {
    conn = w.route.tcp.lock();
    if (!conn) return;  // the client went away: nothing was sent
    dnstap_set_query_peer(m, conn->peer().sockaddr_ptr());
  } else if (w.route.udp.fd >= 0) {
    dnstap_set_query_peer(m, w.route.udp.sa());
  }
  if (w.tap_ns != 0) m.query_time = dnstap_time(w.tap_ns);
  m.response_time = dnstap_now();
  m.response_message = bytes;
  tap_write(m);
}

void QueryEngine::tap_write(const dnstap::Message& m) {
  const auto queue = static_cast<unsigned>(worker_);
  dnstap_->write(queue, m);
  if (tap_flush_pending_) return;
  if (EventLoop::current() != &loop_) {
    dnstap_->flush(queue);
    return;
  }
  // One flush per iteration, after every answer of the iteration has been written: the
  // frames of a whole batch of queries go to the I/O thread as one entry.
  tap_flush_pending_ = true;
  loop_.at_iteration_end([this] {
    tap_flush_pending_ = false;
    if (dnstap_ != nullptr) dnstap_->flush(static_cast<unsigned>(worker_));
  });
}

void dnstap_forward(QueryEngine& engine, Upstream& upstream, std::span<const uint8_t> query,
                    Upstream::Callback done) {
  const int64_t sent_ns = base::wall_count();
  // The upstream's address is known when there is one server; with several, c-ares picks.
  std::optional<Endpoint> server;
  if (upstream.servers().size() == 1) server = upstream.servers().front();
  // DOT when every server is reached over TLS (resolver/upstream/dot.h); else the protocol is not
  // said.
  const bool dot = upstream.all_servers_tls();
  auto wrapped = [&engine, server, dot, sent_ns, done = std::move(done)](
                     UpstreamStatus status, std::span<const uint8_t> answer) {
    if (engine.dnstap() != nullptr && !answer.empty()) {
      dnstap::Message m;
      m.type = dnstap::MessageType::ForwarderResponse;
      if (dot) m.protocol = dnstap::Protocol::Dot;
      if (server) dnstap_set_response_peer(m, server->sockaddr_ptr());
      m.query_time = dnstap_time(sent_ns);
      m.response_time = dnstap_now();
      m.response_message = answer;
      engine.tap_write(m);
    }
    done(status, answer);
  };
  const auto id = upstream.send(query, std::move(wrapped));
  if (!id || engine.dnstap() == nullptr || query.size() > kMaxUpstreamQuery || query.size() < 2)
    return;
  // Log the query as sent: with the ID c-ares put on the wire, not the caller's zero.
  std::array<uint8_t, kMaxUpstreamQuery> sent{};
  std::memcpy(sent.data(), query.data(), query.size());
  sent[0] = static_cast<uint8_t>(*id >> 8);
  sent[1] = static_cast<uint8_t>(*id & 0xff);
  dnstap::Message m;
  m.type = dnstap::MessageType::ForwarderQuery;
  if (dot) m.protocol = dnstap::Protocol::Dot;
  if (server) dnstap_set_response_peer(m, server->sockaddr_ptr());
  m.query_time = dnstap_time(sent_ns);
  m.query_message = std::span<const uint8_t>(sent.data(), query.size());
  engine.tap_write(m);
}

}  // namespace hg::resolver
