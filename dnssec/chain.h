// ChainWalk: the chain of trust from a trust anchor down to one zone, built the way a
// forwarder must (RFC 4035 §5, as a validating stub or a forwarding Unbound does): every DS
// and DNSKEY RRset it needs is asked of the upstream, one at a time, and checked with the keys
// of the zone above before the zone below is trusted.
//
// It does no I/O. need() says which RRset to fetch next (a DS or a DNSKEY query); the caller
// fetches it however it likes (through its cache and in-flight table, from a test's knotd) and
// hands the whole response to feed(). When done(), result() says what the zone's keys are:
//
//   Secure    the target zone's DNSKEYs, each link checked: anchor → DS → DNSKEY → DS → ...
//   Insecure  a delegation on the way has no DS, proven by NSEC or NSEC3 signed by the zone
//             above (RFC 4035 §5.2), or only DS of algorithms or digests not done here;
//             `zone` is where the insecure part begins
//   Bogus     a link that should be signed is not, or does not verify; `why` says which
//
// The walk goes down one label at a time from the deepest zone it has keys for: a DS query
// for the next name either finds a DS (a secure delegation: fetch its DNSKEYs), proves there
// is none at a delegation (insecure from there on), or proves the name is no zone cut (go one
// label further). The target is where the walk stops: the signer of the RRset being checked
// when it has RRSIGs, the query name when it has none (then the walk finds the zone the name
// is in, and whether that zone is signed). A name that does not exist stops the walk early:
// its closest existing ancestor's zone is the answer.
//
// Costs are bounded: every signature check is paid from the caller's Budget, and a walk makes
// at most kMaxFetches fetches; either running out ends it Bogus with Why::BudgetExhausted.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "dnssec/denial.h"
#include "dnssec/rrset_check.h"
#include "wire/message.h"
#include "wire/name.h"

namespace hg::dnssec {

/// What to ask the upstream (DO=1, CD=1): `name` of `type` (43 DS or 48 DNSKEY).
struct Fetch {
  wire::Name name;
  uint16_t type = 0;
};

/// A zone's keys as far as a chain of trust established them.
struct ZoneKeys {
  wire::Name zone;  ///< the zone (Secure), where the insecure part begins (Insecure)
  Security security = Security::Bogus;
  Why why = Why::None;  ///< Bogus (and Insecure: NoSupportedAlgorithm or None)
  /// Secure only: the DNSKEY RDATAs of `zone`, validated.
  std::vector<std::vector<uint8_t>> keys;
  /// How long this may be kept, seconds: the smallest TTL of the RRsets it rests on, capped
  /// by their signatures' expiry (RFC 4035 §5.3.3).
  uint32_t ttl = 0;
};

/// The trust anchor a walk starts from: a zone and the DS RDATAs that vouch for its keys
/// (a DNSKEY anchor is turned into its DS by the caller: ds_digest with SHA-256).
struct Anchor {
  wire::Name zone;
  std::vector<std::vector<uint8_t>> ds;
};

/// An RRset whose signature check_rrset() found Secure: the RRset, the TTL that check gave
/// it (capped by the signature's expiry) and the key tag of the key that verified it.
struct CheckedRrset {
  Rrset set;
  uint32_t ttl = 0;
  uint16_t key_tag = 0;
};

/// The NSEC and NSEC3 records of a response's authority section that `zone` signed, each
/// RRset checked with the zone's `keys`: what a denial may rest on. Records outside the zone
/// are left out; an RRset of the zone that does not check is left out too, and its reason
/// kept in `why` (the first one), for when the proof then fails.
struct DenialRecords {
  std::vector<NsecRecord> nsec;
  std::vector<Nsec3Record> nsec3;
  Why why = Why::None;
  uint32_t ttl = 0xffffffff;  ///< the smallest TTL of the RRsets kept
  /// Every RRset kept, as checked (the records above are theirs): what a proof that used
  /// them may hand on (AnswerValidation::proven_denial(), RFC 8198).
  std::vector<CheckedRrset> sets;
};
DenialRecords checked_denial(const wire::Message& m, const wire::Name& zone,
                             std::span<const std::vector<uint8_t>> keys, int64_t now,
                             Budget& budget);

class ChainWalk {
 public:
  /// A walk fetches at most this many RRsets: one DS per label from the anchor down and one
  /// DNSKEY per zone cut — enough for the deepest names in real use (an ip6.arpa name has 34
  /// labels) with a few zone cuts on the way. A path longer than that stops the walk Bogus.
  static constexpr int kMaxFetches = 40;

  /// Keys already known (from an earlier walk, kept by the caller): the deepest known zone at
  /// or above the target is where the walk starts, or, when one is Insecure, the answer.
  /// nullptr: nothing known for `zone`.
  using Known = std::function<const ZoneKeys*(const wire::Name& zone)>;

  /// A walk from `anchor` to `target` (which must be at or below the anchor's zone), checking
  /// signatures at time `now` (seconds since 1970) and paying them from `budget`, which must
  /// outlive the walk.
  ChainWalk(const Anchor& anchor, const wire::Name& target, int64_t now, Budget& budget,
            const Known& known = {});

  bool done() const noexcept { return done_; }
  /// The next RRset to fetch; only while !done().
  const Fetch& need() const noexcept { return need_; }
  /// The response to need(): a whole DNS message, or empty when the fetch failed (then the
  /// walk ends Bogus: without the link there is no chain).
  void feed(std::span<const uint8_t> response);
  /// Only when done().
  const ZoneKeys& result() const noexcept { return result_; }
  /// Every zone the walk established keys for, in order from the anchor down (the caller
  /// may keep them; the last is result() when Secure).
  const std::vector<ZoneKeys>& established() const noexcept { return established_; }
  /// Fetches made so far.
  int fetches() const noexcept { return fetches_; }

 private:
  void ask(const wire::Name& name, uint16_t type);
  void finish(Security s, Why why, const wire::Name& zone);
  /// From `from` (the current zone, or a name in it proven no zone cut) one label further
  /// towards the target, or done when `from` is the target.
  void descend(const wire::Name& from);
  void on_dnskey(const wire::Message& m);
  void on_ds(const wire::Message& m);

  wire::Name target_;
  int64_t now_;
  Budget& budget_;
  bool done_ = false;
  Fetch need_;
  ZoneKeys result_;
  std::vector<ZoneKeys> established_;
  int fetches_ = 0;
  // The deepest zone whose keys are established (current_.security Secure), and the DS that
  // vouch for the keys of `pending_` while its DNSKEYs are being fetched.
  ZoneKeys current_;
  wire::Name pending_;
  std::vector<std::vector<uint8_t>> pending_ds_;
  uint32_t pending_ttl_ = 0;
  wire::Name probe_;  // the name whose DS is being asked
};

}  // namespace hg::dnssec
