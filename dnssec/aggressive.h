// AggressiveCache: RFC 8198's aggressive use of the DNSSEC-validated cache. An NSEC or NSEC3
// record that a validated denial rested on says more than the one name asked: nothing exists
// in its whole range. Kept, it answers NXDOMAIN (or NODATA) for any other name in that range
// without asking upstream — the standard defence against a flood of random names under a
// signed zone, each of which would otherwise cost an upstream query.
//
// The store learns only from AnswerValidation::proven_denial() (answer.h): RRsets whose
// signatures were checked, narrowed to those a secure proof used. It answers only when the
// same proof functions the validator uses (denial.h) find the stored records prove the
// denial, and it answers with the whole proof — the SOA, the NSEC or NSEC3 RRsets and their
// RRSIGs in the authority section — so that a validating client can check it itself.
//
// What it will not do, and why:
//  - Opt-Out NSEC3 records are not kept: their ranges may hide unsigned delegations, so they
//    never prove NXDOMAIN (RFC 8198 §5.2 with RFC 5155 §9.2); without their ranges an Opt-Out
//    zone gains nothing but exact matches, which the ordinary cache already answers.
//  - No answer at or below a delegation an NSEC or NSEC3 shows (NS without SOA) or below a
//    DNAME (RFC 6840 §4.1): that is another zone's to say. This includes DS at a delegation:
//    the engine's chains of trust always ask upstream for it.
//  - No positive answers synthesised from wildcards (RFC 8198 §5.3): a wildcard that exists
//    stops NXDOMAIN, and only its NODATA is answered.
//  - NSEC3 with more iterations than the limit is never kept (RFC 9276 §3.2), and every
//    synthesis pays its SHA-1 computations from the caller's HashBudget.
//
// TTLs: a record is kept for the TTL its check gave it (its RRSIG's Original TTL and expiry,
// RFC 4035 §5.3.3), no longer than the zone keys' TTL, and no longer than the SOA's TTL and
// MINIMUM (RFC 8198 §5.4, RFC 9077 §3); a synthesised response counts down from there.
//
// One per engine worker: single-threaded, no I/O, time given by the caller. Bounded by
// AggressiveLimits; the oldest learned record goes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "dnssec/answer.h"
#include "dnssec/denial.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::dnssec {

struct AggressiveLimits {
  /// NSEC/NSEC3 records held in all. A record costs 700 to 900 bytes here (its owner name is
  /// held inline, 256 bytes, plus RDATA, one RRSIG and two index nodes): 10,000 are 7 to 9 MB
  /// per worker, and ten thousand ranges — enough for the zones a worker's clients use.
  std::size_t max_records = 10'000;
  /// Records held for one zone: a flood under one zone (or a zone walked on purpose, record
  /// after record) takes at most a quarter of the store, and the denials of other zones stay.
  std::size_t max_per_zone = 2'500;
  /// NSEC3 records with more iterations are never kept (RFC 9276 §3.2).
  uint16_t max_iterations = kDefaultMaxNsec3Iterations;
};

/// A response made from the store: a whole DNS message.
struct Synthesis {
  wire::RCode rcode = wire::RCode::NXDomain;  ///< NXDomain, or NoError for NODATA
  /// Header (ID 0, QR, RA and AD set: every record in it was validated secure; the caller sets
  /// the ID, RD/CD and whether AD stays, RFC 6840 §5.8), the question as asked, and the
  /// authority section: the SOA, the NSEC or NSEC3 RRsets, each with its RRSIGs. No OPT.
  std::vector<uint8_t> response;
  /// The TTL of every record in it: what is left of the shortest-lived one.
  uint32_t ttl = 0;
};

class AggressiveCache {
 public:
  explicit AggressiveCache(AggressiveLimits limits = {}) : limits_(limits) {}

  /// Keeps the NSEC or NSEC3 records of `d` (from AnswerValidation::proven_denial()), and the
  /// zone's SOA, learned at `now` (seconds since 1970). The whole denial is refused if any of
  /// it is malformed — an owner outside the zone, an RRset of more than one record, RDATA that
  /// does not parse, no RRSIG, a TTL of 0 — and NSEC3 records with Opt-Out, another hash
  /// algorithm or too many iterations are left out. A record already held is replaced (it is
  /// then the newest). Returns how many records were kept.
  std::size_t learn(const ProvenDenial& d, int64_t now);

  /// A response to `qname` `qtype` `qclass` at `now` proven by records held, or nullopt:
  /// NXDOMAIN when a record covers `qname` and one covers the wildcard at its closest encloser
  /// (RFC 4035 §5.4, RFC 5155 §8.4); NODATA when a record at `qname` (or for an empty
  /// non-terminal, or at the wildcard) has neither `qtype` nor CNAME. Class IN only; never for
  /// ANY. NSEC3 hashing is paid from `hashes`; when it runs out, nullopt.
  std::optional<Synthesis> synthesize(const wire::Name& qname, uint16_t qtype, uint16_t qclass,
                                      int64_t now, HashBudget& hashes);

  /// Records held (NSEC and NSEC3; each zone's SOA besides).
  std::size_t size() const noexcept { return total_; }
  /// Zones with records held.
  std::size_t zones() const noexcept { return zones_.size(); }
  const AggressiveLimits& limits() const noexcept { return limits_; }

 private:
  struct Entry {
    std::vector<uint8_t> rdata;
    std::vector<std::vector<uint8_t>> rrsigs;
    int64_t expires = 0;
    uint64_t seq = 0;
  };
  using Entries = std::map<wire::Name, Entry>;
  struct Zone {
    wire::Name apex;
    bool nsec3 = false;
    uint16_t iterations = 0;  // NSEC3: the chain's parameters (RFC 5155 §7.3: one per zone)
    std::vector<uint8_t> salt;
    std::vector<uint8_t> soa_rdata;
    std::vector<std::vector<uint8_t>> soa_rrsigs;
    int64_t soa_expires = 0;
    Entries entries;                              // by owner, in canonical order
    std::map<uint64_t, Entries::iterator> order;  // oldest first
  };
  // One record of a synthesised answer: its owner, type, RDATA and RRSIGs.
  struct Used {
    const wire::Name* owner;
    uint16_t type;
    const Entry* entry;
  };

  Zone* zone_for(const wire::Name& qname);
  // The record at `owner`, or the one before it in canonical order (the last one when none
  // is: the chain wraps around, RFC 4034 §4.1.1); expired ones are dropped on the way.
  Entries::iterator at_or_before(Zone& z, const wire::Name& owner, int64_t now);
  void erase(Zone& z, Entries::iterator it);
  void evict_oldest(Zone& z);
  std::optional<Synthesis> nsec(Zone& z, const wire::Name& qname, uint16_t qtype, uint16_t qclass,
                                int64_t now);
  std::optional<Synthesis> nsec3(Zone& z, const wire::Name& qname, uint16_t qtype, uint16_t qclass,
                                 int64_t now, HashBudget& hashes);
  std::optional<Synthesis> write(const Zone& z, const wire::Name& qname, uint16_t qtype,
                                 uint16_t qclass, bool nxdomain, std::span<const Used> used,
                                 int64_t now) const;

  AggressiveLimits limits_;
  std::map<wire::Name, Zone> zones_;
  std::map<uint64_t, Zone*> order_;  // every record, oldest first: seq → its zone
  uint64_t next_seq_ = 0;
  std::size_t total_ = 0;
};

}  // namespace hg::dnssec
