// Whether the default upstreams deliver DNSSEC records (--dnssec validate or require).
//
// A validating forwarder depends on its upstreams handing over signatures, NSEC/NSEC3
// proofs, DS and DNSKEY records. Many home routers and some middleboxes do not: they strip
// RRSIGs, drop EDNS, or answer SERVFAIL to DO=1. Behind one of those every signed name would
// be bogus. So each server is asked, at start and whenever the upstreams change, for the
// trust anchor zone's DNSKEY RRset with DO and CD set, and that answer is validated from the
// trust anchor like any other (dnssec/answer.h), its fetches sent to the same server:
//
//   yes      the answer is secure (or insecure: the anchor's algorithm is not done here, so
//            nothing is lost by validating): the server delivers DNSSEC records
//   no       bogus (signatures missing, a key that does not match the anchor) or refused
//            (SERVFAIL, REFUSED, NOTIMP, an unusable answer) — a definite answer, kept until
//            the upstreams change, so a verdict never flaps
//   unknown  no answer at all (down, unreachable): asked again after 5 s, doubling up to
//            5 minutes; meanwhile validation goes on as if it delivered
//
// When any default upstream says no, DnssecPath for the default upstreams becomes Insecure
// (--dnssec validate: answers passed on unvalidated, never with AD, as without validation)
// or Refuse (--dnssec require: SERVFAIL with EDE 22); each change of a server's verdict is
// logged once. `hourglass-ctl dnssec` and `upstreams`, and /metrics, show the verdicts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dnssec/answer.h"
#include "dnssec/trust_anchor.h"
#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"
#include "resolver/upstream/upstream.h"

namespace hg::resolver {

enum class DnssecCapability : uint8_t { Unknown, Yes, No };
/// "unknown", "yes", "no".
const char* to_string(DnssecCapability c) noexcept;

/// What happens to an answer from the default upstreams to a query without CD.
enum class DnssecPath : uint8_t {
  Validate,  ///< validated (the upstreams deliver DNSSEC records, or it is not known yet)
  Insecure,  ///< --dnssec validate behind an upstream that does not: passed on, never AD
  Refuse,    ///< --dnssec require behind such an upstream: SERVFAIL, EDE 22
};

struct DnssecServerState {
  Endpoint server;
  DnssecCapability capability = DnssecCapability::Unknown;
  std::string detail;  ///< why, in a few words ("RRSIGs missing from . DNSKEY")
};

/// The probe's verdicts, written by the probe (worker 0's loop), read by every worker (path,
/// on each miss) and by the control socket and metrics (servers).
class DnssecUpstreams {
 public:
  DnssecPath path() const noexcept { return path_.load(std::memory_order_relaxed); }
  std::vector<DnssecServerState> servers() const;
  void set(std::vector<DnssecServerState> servers, DnssecPath path);

 private:
  std::atomic<DnssecPath> path_{DnssecPath::Validate};
  mutable std::mutex mu_;
  std::vector<DnssecServerState> servers_;  // guarded by mu_
};

/// Probes the default upstreams, on one loop (worker 0's), each server through an Upstream
/// of its own so that the verdict is that server's.
class DnssecProbe {
 public:
  /// `base`: the default upstreams' options (TLS settings, lifetime); its servers are
  /// replaced per probe, and it publishes no statistics.
  DnssecProbe(EventLoop& loop, std::shared_ptr<const dnssec::TrustAnchors> anchors, bool require,
              UpstreamOptions base, DnssecUpstreams& out);
  ~DnssecProbe();
  DnssecProbe(const DnssecProbe&) = delete;
  DnssecProbe& operator=(const DnssecProbe&) = delete;

  /// Probes `servers` (the default upstreams now), forgetting the verdicts of servers no
  /// longer among them and any probe in progress. On the loop's thread.
  void start(const std::vector<Endpoint>& servers);
  /// Ends every probe in progress (shutdown). On the loop's thread.
  void cancel();

 private:
  struct Probe {
    DnssecServerState state;
    std::unique_ptr<Upstream> upstream;
    std::unique_ptr<dnssec::AnswerValidation> validation;
    Millis backoff{5000};
    TimerId retry{};
    bool retry_armed = false;
  };
  void ask(std::size_t i, const wire::Name& name, uint16_t type);
  void on_answer(std::size_t i, uint64_t round, UpstreamStatus status,
                 std::span<const uint8_t> answer);
  void conclude(std::size_t i, DnssecCapability c, std::string detail);
  void publish();

  EventLoop& loop_;
  std::shared_ptr<const dnssec::TrustAnchors> anchors_;
  bool require_;
  UpstreamOptions base_;
  DnssecUpstreams& out_;
  wire::Name zone_;  ///< the zone whose DNSKEY is asked: the root, or the first anchored zone
  std::vector<Probe> probes_;
  uint64_t round_ = 0;  ///< bumped by start() and cancel(): older callbacks are ignored
};

}  // namespace hg::resolver
