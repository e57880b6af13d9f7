// DnsClient: blocking DNS queries for the rehearsal tools, sent the way the daemon sends its
// own — through hg_resolver's c-ares Upstream on a private EventLoop — but one server at a
// time, so that each server's own answer (and its TTLs) can be compared with the others'.
//
// Every call is bounded: a query to a server lives `tries` x the per-try timeout (the Upstream
// retransmits within it as the server's RTT says), and the loop gives up after a hard
// deadline derived from those. Answers that cannot be parsed are
// reported as BadResponse, never thrown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/upstream/upstream.h"
#include "wire/name.h"
#include "wire/owned.h"
#include "wire/types.h"

namespace hg::rehearse {

struct DnsOutcome {
  base::Endpoint server;
  resolver::UpstreamStatus status = resolver::UpstreamStatus::Internal;
  std::optional<wire::OwnedMessage> answer;  ///< set when status is Ok and the answer parsed

  bool ok() const noexcept { return answer.has_value(); }
  /// "127.0.0.1:5300: timeout", "...: REFUSED", for reports.
  std::string describe_failure() const;
};

class DnsClient {
 public:
  struct Options {
    resolver::Millis try_timeout{1000};
    int tries = 2;
  };
  DnsClient();
  explicit DnsClient(Options options);
  ~DnsClient();
  DnsClient(const DnsClient&) = delete;
  DnsClient& operator=(const DnsClient&) = delete;

  /// Asks every server in `servers` the same question at once (RD as given, EDNS with a
  /// 1232-byte payload, no DO) and returns one outcome per server, in the same order.
  std::vector<DnsOutcome> ask(std::span<const base::Endpoint> servers, const wire::Name& name,
                              wire::RRType type, bool rd);
  DnsOutcome ask_one(const base::Endpoint& server, const wire::Name& name, wire::RRType type,
                     bool rd);

  /// Queries sent so far (for the report and for rate bounds in tests).
  uint64_t queries_sent() const noexcept { return sent_; }

 private:
  resolver::Upstream* upstream_for(const base::Endpoint& server, std::string& error);

  Options options_;
  std::unique_ptr<resolver::EventLoop> loop_;
  std::map<std::string, std::unique_ptr<resolver::Upstream>> upstreams_;
  uint64_t sent_ = 0;
};

/// The query's wire form: one question, RD as given, an OPT record last (as Upstream needs).
std::vector<uint8_t> build_query(const wire::Name& name, wire::RRType type, bool rd);

}  // namespace hg::rehearse
