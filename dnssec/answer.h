// AnswerValidation: the verdict on one upstream response to one question (RFC 4035 §5.3,
// §5.4; RFC 4033 §5: secure, insecure or bogus). It finds out which zones' keys the
// response rests on — the signer of each RRset of the answer's CNAME/DNAME chain, the zone of
// a denial, or, for unsigned data, the zone the name is in — walks the chain of trust to each
// (chain.h), and then checks:
//
//   - every RRset of the chain from the question name, with its zone's keys; one synthesised
//     from a wildcard also needs the NSEC/NSEC3 proof that no closer name exists (§5.3.4);
//     a CNAME synthesised from a DNAME is unsigned and checked against the DNAME;
//   - where the chain ends without data (NXDOMAIN, or NOERROR without the type), the NSEC or
//     NSEC3 proof of that, for the last name of the chain (§5.4, RFC 5155 §8);
//   - unsigned data is insecure only if the zone it is in is proven insecure (or lies under
//     no trust anchor); in a secure zone it is bogus.
//
// Like ChainWalk it does no I/O: need()/feed() for the DS and DNSKEY RRsets it has to fetch,
// then verdict(). Every walk and check pays from one Budget for the whole response.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dnssec/chain.h"
#include "dnssec/rrset_check.h"
#include "dnssec/rrsets.h"
#include "dnssec/trust_anchor.h"
#include "wire/message.h"
#include "wire/name.h"

namespace hg::dnssec {

struct Verdict {
  Security security = Security::Bogus;
  Why why = Why::None;
  /// Secure: the longest the answer may be cached as secure (the smallest TTL of every RRset
  /// and chain link it rests on, each capped by its signature's expiry).
  uint32_t ttl = 0;
};

/// What a secure denial rests on, for reuse (RFC 8198, dnssec/aggressive.h): only RRsets
/// whose signatures AnswerValidation checked and found Secure with the zone's validated keys,
/// and of the NSEC or NSEC3 RRsets only those the proof needs (none of the response's others:
/// an RRset that failed its check, or one the proof did without, is never here). Each RRset's
/// RRSIGs are those of the key that verified it, so a client can check it again.
struct ProvenDenial {
  wire::Name zone;   ///< the signer of every RRset here, lowercased
  wire::Name qname;  ///< the name denied: the question's, or the last of its CNAME chain
  uint16_t qtype = 0;
  bool nxdomain = false;  ///< NXDOMAIN; otherwise NODATA
  bool nsec3 = false;     ///< `records` are NSEC3 RRsets; otherwise NSEC
  /// The zone's SOA RRset from the authority section (RFC 2308 §3), checked like the rest.
  CheckedRrset soa;
  /// The NSEC or NSEC3 RRsets the proof used, in response order (at most a few).
  std::vector<CheckedRrset> records;
  /// How long the denial may be reused, seconds: the smallest of the SOA's TTL and MINIMUM
  /// (RFC 2308 §5, RFC 9077 §3), every RRset's checked TTL (signature expiry included) and
  /// the zone keys' TTL.
  uint32_t ttl = 0;
};

class AnswerValidation {
 public:
  /// Validates `response` (a whole DNS message, copied) to `qname`/`qtype` against `anchors`
  /// at time `now`. `known` as for ChainWalk. A response with another rcode than NOERROR or
  /// NXDOMAIN has nothing to validate: it ends at once Insecure.
  AnswerValidation(const TrustAnchors& anchors, std::span<const uint8_t> response,
                   const wire::Name& qname, uint16_t qtype, int64_t now,
                   ChainWalk::Known known = {}, Budget budget = {});
  // The walk in progress holds a reference to budget_, and m_ views bytes_: never copied or
  // moved (keep one behind a pointer).
  AnswerValidation(const AnswerValidation&) = delete;
  AnswerValidation& operator=(const AnswerValidation&) = delete;

  bool done() const noexcept { return done_; }
  const Fetch& need() const noexcept { return walk_->need(); }
  void feed(std::span<const uint8_t> response);
  const Verdict& verdict() const noexcept { return verdict_; }
  /// The response being validated, as given.
  std::span<const uint8_t> response() const noexcept { return bytes_; }
  /// Every zone the walks established keys for (for the caller's key cache), and every zone
  /// they proved insecure.
  const std::vector<ZoneKeys>& learned() const noexcept { return learned_; }
  /// DS and DNSKEY fetches made so far.
  int fetches() const noexcept { return fetches_; }
  /// Done and Secure, and the answer a denial (NXDOMAIN or NODATA, RFC 4035 §5.4) proved by
  /// NSEC or NSEC3: what the proof rests on (see ProvenDenial). A proof through an Opt-Out
  /// range is insecure, so never here (a matching NSEC3 may still carry the flag). Empty
  /// otherwise, and also when the SOA does not check or the proof cannot be narrowed to the
  /// RRsets it uses within bounds; the verdict is the same either way.
  const std::optional<ProvenDenial>& proven_denial() const noexcept { return proven_; }

 private:
  // One piece of the response to judge, and the name whose zone it needs.
  struct Piece {
    enum Kind : uint8_t { Signed, Unsigned, Denial } kind = Signed;
    std::size_t set = 0;  // index into answer_ (Signed, Unsigned)
    wire::Name target;  // signer (Signed, a signed Denial) or the name (Unsigned, unsigned Denial)
  };
  void plan();
  void next_walk();
  void evaluate();
  const ZoneKeys* zone_for(const wire::Name& target) const;
  void judge(Security s, Why why, uint32_t ttl);
  void expose_denial(const DenialRecords& d, const ZoneKeys& z, bool by_nsec);

  const TrustAnchors& anchors_;
  std::vector<uint8_t> bytes_;
  wire::Message m_;
  wire::Name qname_;
  uint16_t qtype_;
  int64_t now_;
  ChainWalk::Known known_;
  Budget budget_;
  bool done_ = false;
  Verdict verdict_;
  std::vector<SectionRrset> answer_;
  std::vector<Piece> pieces_;
  wire::Name denial_name_;  // the last name of the chain, when the chain ends without data
  bool nxdomain_ = false;
  std::vector<wire::Name> targets_;  // distinct, in order
  std::size_t next_target_ = 0;
  std::optional<ChainWalk> walk_;
  std::vector<std::pair<wire::Name, ZoneKeys>> zones_;  // target → what its walk found
  std::vector<ZoneKeys> learned_;
  int fetches_ = 0;
  std::optional<ProvenDenial> proven_;
};

}  // namespace hg::dnssec
