// Upstream's private parts (resolver/upstream/upstream.h): the records of a server, an
// attempt, an attempt's socket and a query, and the limits they are sized by. Shared by the two
// files that implement Upstream, and included by nothing else:
//   upstream.cc          the queries: server choice, retransmission, EDNS fallback, 0x20,
//                        the answers
//   upstream_sockets.cc  the sockets: a port of its own per attempt, and what arrives on it
// Like every header, it does not include <ares.h>: a channel is c-ares's opaque
// ares_channeldata (c-ares's ares_channel is a pointer to it; cares_compat.h opens it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "resolver/upstream/upstream.h"

struct ares_channeldata;

namespace hg::resolver {

namespace upstream_limits {
inline constexpr std::size_t kMaxQuery = 512;
inline constexpr std::size_t kMaxAttempts = 16;
inline constexpr std::size_t kOptSize = 11;
// What one read of an attempt's socket takes. A reply longer than the payload size the query
// offered (the EDNS payload, or 512 without EDNS) is taken as truncated: asked again over TCP.
inline constexpr std::size_t kMaxDatagram = 4097;
// Datagrams read from one attempt's socket per wake-up before the loop serves the others: a
// flood of forgeries at one port cannot keep the loop on it.
inline constexpr int kReadsPerWake = 8;
// Disconnected attempt sockets a worker keeps per address family for later attempts.
inline constexpr std::size_t kMaxIdlePorts = 256;
}  // namespace upstream_limits

struct Upstream::Server {
  Upstream* owner = nullptr;
  Endpoint endpoint;
  // c-ares's channel to it, for TCP only (cares_compat.h): a truncated UDP answer is asked
  // again there.
  ares_channeldata* ares = nullptr;
  std::size_t pending = 0;  // attempts not ended yet (UDP, TCP or DoT)
  bool retired = false;     // removed by a reload: destroy when pending reaches 0
  bool destroy_scheduled = false;
  TimerId destroy_timer;
  TimerId timer;
  MonoTime timer_at{};
  std::vector<int> fds;  // sockets c-ares asked us to watch (TCP)
  ServerHealth health;
  std::shared_ptr<UpstreamServerStats> stats;
  Micros last_answer{-1};           // when the server last answered anything (options_.clock_us)
  std::unique_ptr<DotChannel> dot;  // DNS over TLS: this instead of `ares`
  // Its answers keep their AD bit (DotSettings::trusts_ad): a DoT server whose certificate
  // name is checked and that --trust-ad names. Every other server's AD is cleared.
  bool trust_ad = false;
};

// A UDP socket for attempts (see send_udp). While an attempt's datagram holds its port
// it belongs to that attempt; disconnected, it has no port and waits on idle_ports_.
struct Upstream::PortSocket {
  int fd;
  int family;
  std::size_t index;  // in ports_
  Attempt* attempt;   // nullptr while idle
};

// One copy of a query, to one server, with its own ID (and letter case): over UDP from a port
// of its own, then over TCP through c-ares if the answer was truncated. No default
// member initialisers, so a Query's array of them costs nothing to create: launch() sets each
// one to Attempt{} (all zero) before use, and only the first n_attempts are ever read.
struct Upstream::Attempt {
  Query* query;
  Server* server;
  Micros sent;
  upstream_wire::CaseBits case_bits;
  PortSocket* port;  // its own UDP socket, so its own source port; nullptr: none
  uint64_t serial;   // unique in this Upstream: tells a reused Attempt from the one it was
  uint16_t id;
  bool outstanding;  // not ended yet (no answer, failure or expiry)
  bool tcp;          // asked again over TCP after a truncated answer (c-ares holds it)
  bool truncated;    // accept_datagram(): TC set, or longer than the query offered
  bool edns;         // sent with the OPT record
  bool edns_retry;   // the retry without OPT after an EDNS rejection
  bool use_0x20;     // sent with a random letter case
  bool probe;        // hedged to a suspect server
  bool timed_out;    // its retransmission timer expired (Karn: no RTT sample)
  // accept_datagram() found the reply's question byte for byte as sent (0x20 on, no TC), so
  // handle_result need not compare it again.
  bool question_exact;
  bool retransmit;   // sent because an earlier attempt of the query to this server timed out
  bool replied;      // the server answered it (any RCODE)
  bool judged_lost;  // unanswered when a later copy to the same server was answered
  bool classified;   // (retransmit) counted as spurious or needed
  bool local_error;  // no socket could be had for it: not the server's fault
  bool tls_auth;     // DoT: failed because the certificate or pin did not verify
};

// One send(): the caller's query, its attempts, its retransmission timer.
struct Upstream::Query {
  Query* prev = nullptr;
  Query* next = nullptr;
  Callback done;
  std::array<uint8_t, upstream_limits::kMaxQuery> base;  // the first `len` bytes are set by send()
  uint16_t len = 0;
  uint16_t qend = 0;  // end of the question
  bool has_opt = false;
  bool finished = false;  // the callback has run (or is running)
  int busy = 0;           // being processed: not to be freed yet
  MonoTime give_up{};
  TimerId timer{};
  MonoTime timer_at{};
  uint64_t failed = 0;  // bit i: servers_[i] failed this query (SERVFAIL, unreachable, ...)
  UpstreamStatus failure = UpstreamStatus::Timeout;
  uint8_t n_attempts = 0;
  uint8_t outstanding = 0;
  int timeouts = 0;            // times the retransmission timer fired
  bool retransmitted = false;  // some attempt has `retransmit` set
  // A UDP reply in the wrong 0x20 case came (a forger at work, or a server that does not echo
  // case): the query's UDP attempts were ended, and it goes on over TCP only.
  bool tcp_only = false;
  std::array<Attempt, upstream_limits::kMaxAttempts>
      attempts;  // the first n_attempts are set by launch()
};

}  // namespace hg::resolver
