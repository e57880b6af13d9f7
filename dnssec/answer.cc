#include "dnssec/answer.h"

#include <algorithm>
#include <limits>

#include "base/bytes.h"
#include "dnssec/crypto.h"
#include "dnssec/denial.h"
#include "dnssec/rrsets.h"
#include "dnssec/signed_data.h"

namespace hg::dnssec {

namespace {

constexpr uint16_t kCname = 5;
constexpr uint16_t kDname = 39;
constexpr uint16_t kRrsig = 46;
constexpr uint16_t kAny = 255;
constexpr uint16_t kTypeNsec = 47;
constexpr uint16_t kTypeNsec3 = 50;
// A chain longer than this is cut: no resolver follows more (Unbound 8+1, BIND 16).
constexpr int kMaxChain = 16;

std::optional<wire::Name> name_in_rdata(const std::vector<uint8_t>& rdata) {
  auto n = wire::Name::from_wire(rdata);
  if (!n) return std::nullopt;
  return *n;
}

// The signer of an RRset: the first RRSIG for it of an algorithm done here whose signer is
// the owner or above it (RFC 4035 §5.3.1). nullopt: no usable RRSIG.
std::optional<wire::Name> signer_of(const Rrset& set) {
  for (const auto& raw : set.rrsigs) {
    const auto sig = parse_rrsig(raw);
    if (sig && algorithm_supported(sig->algorithm) && set.owner.is_subdomain_of(sig->signer))
      return sig->signer.lowercased();
  }
  return std::nullopt;
}

// Whether `cname` (owner → target) is what `dname` (owner → target) synthesises (RFC 6672
// §2.2): the CNAME's owner below the DNAME's, its target the same labels under the DNAME's
// target.
bool synthesised_by(const Rrset& cname, const Rrset& dname) {
  if (cname.rdatas.size() != 1 || dname.rdatas.size() != 1) return false;
  if (!cname.owner.is_subdomain_of(dname.owner) || cname.owner == dname.owner) return false;
  const auto target = name_in_rdata(cname.rdatas[0]);
  const auto dtarget = name_in_rdata(dname.rdatas[0]);
  if (!target || !dtarget) return false;
  const int keep = cname.owner.label_count() - dname.owner.label_count();
  const auto owner_wire = cname.owner.wire();
  const auto prefix = owner_wire.first(cname.owner.size() - dname.owner.size());
  std::vector<uint8_t> want(prefix.begin(), prefix.end());
  want.insert(want.end(), dtarget->wire().begin(), dtarget->wire().end());
  const auto expected = wire::Name::from_wire(want);
  return keep > 0 && expected && *expected == *target;
}

DenialVerdict either(const DenialRecords& d, DenialVerdict nsec, DenialVerdict nsec3) {
  if (nsec == DenialVerdict::Proven || nsec3 == DenialVerdict::Proven) return DenialVerdict::Proven;
  if (nsec3 == DenialVerdict::ProvenInsecure) return DenialVerdict::ProvenInsecure;
  return d.nsec3.empty() ? nsec : nsec3;
}

}  // namespace

AnswerValidation::AnswerValidation(const TrustAnchors& anchors, std::span<const uint8_t> response,
                                   const wire::Name& qname, uint16_t qtype, int64_t now,
                                   ChainWalk::Known known, Budget budget)
    : anchors_(anchors),
      bytes_(response.begin(), response.end()),
      qname_(qname),
      qtype_(qtype),
      now_(now),
      known_(std::move(known)),
      budget_(budget) {
  verdict_.ttl = std::numeric_limits<uint32_t>::max();
  if (!m_.parse(bytes_)) {
    judge(Security::Bogus, Why::Malformed, 0);
    done_ = true;
    return;
  }
  const wire::RCode rcode = m_.rcode();
  if (rcode != wire::RCode::NoError && rcode != wire::RCode::NXDomain) {
    verdict_ = Verdict{Security::Insecure, Why::None, 0};
    done_ = true;
    return;
  }
  nxdomain_ = rcode == wire::RCode::NXDomain;
  plan();
  next_walk();
}

void AnswerValidation::plan() {
  answer_ = section_rrsets(m_, wire::Section::Answer);
  auto find = [&](const wire::Name& owner, uint16_t type) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < answer_.size(); ++i)
      if (answer_[i].set.type == type && answer_[i].set.owner == owner) return i;
    return std::nullopt;
  };
  auto add = [&](Piece p) {
    pieces_.push_back(p);
    if (std::find(targets_.begin(), targets_.end(), p.target) == targets_.end())
      targets_.push_back(p.target);
  };
  auto add_set = [&](std::size_t i) {
    const auto signer = signer_of(answer_[i].set);
    if (signer) {
      add(Piece{Piece::Signed, i, *signer});
    } else {
      add(Piece{Piece::Unsigned, i, answer_[i].set.owner});
    }
  };
  // Follow the chain from the question name: the data, or a CNAME, or a DNAME above it.
  wire::Name name = qname_;
  bool answered = false;
  for (int step = 0; step < kMaxChain && !answered; ++step) {
    if (qtype_ == kAny) {
      bool any = false;
      for (std::size_t i = 0; i < answer_.size(); ++i) {
        if (answer_[i].set.owner == name && answer_[i].set.type != kRrsig) {
          add_set(i);
          any = true;
        }
      }
      answered = any;
      if (any) break;
    } else if (const auto i = find(name, qtype_)) {
      add_set(*i);
      answered = true;
      break;
    }
    std::optional<std::size_t> dname;
    for (std::size_t i = 0; i < answer_.size(); ++i)
      if (answer_[i].set.type == kDname && name.is_subdomain_of(answer_[i].set.owner) &&
          !(name == answer_[i].set.owner))
        dname = i;
    const auto cname = find(name, kCname);
    if (!cname) break;
    const auto target =
        name_in_rdata(answer_[*cname].set.rdatas.empty() ? std::vector<uint8_t>{}
                                                         : answer_[*cname].set.rdatas[0]);
    if (!target) break;
    if (dname && !signer_of(answer_[*cname].set) &&
        synthesised_by(answer_[*cname].set, answer_[*dname].set)) {
      add_set(*dname);  // the CNAME is the DNAME's, unsigned: the DNAME vouches for it
    } else {
      add_set(*cname);
    }
    name = *target;
  }
  if (!answered) {
    // The chain ends without the data: the last name needs a denial.
    denial_name_ = name;
    wire::Name zone = name;
    bool signed_denial = false;
    for (const auto& s : section_rrsets(m_, wire::Section::Authority)) {
      if (s.set.type != 6 && s.set.type != 47 && s.set.type != 50) continue;  // SOA, NSEC(3)
      if (const auto signer = signer_of(s.set); signer && name.is_subdomain_of(*signer)) {
        zone = *signer;
        signed_denial = true;
        break;
      }
    }
    add(Piece{signed_denial ? Piece::Denial : Piece::Unsigned, answer_.size(), zone});
  }
}

void AnswerValidation::next_walk() {
  while (next_target_ < targets_.size()) {
    const wire::Name& target = targets_[next_target_];
    const ZoneAnchors* anchor = anchors_.closest(target);
    if (anchor == nullptr) {
      // No trust anchor above the name: nothing can make it secure (RFC 4035 §4.3).
      zones_.emplace_back(target, ZoneKeys{target, Security::Insecure, Why::None, {}, 0});
      ++next_target_;
      continue;
    }
    Anchor a{anchor->zone, anchor->ds};
    for (const auto& key : anchor->dnskey)
      if (auto ds = ds_of_dnskey(anchor->zone, key, 2)) a.ds.push_back(std::move(*ds));
    // Known: the caller's cache, then what this validation's earlier walks learned.
    ChainWalk::Known known = [this](const wire::Name& zone) -> const ZoneKeys* {
      for (const auto& z : learned_)
        if (z.zone == zone) return &z;
      return known_ ? known_(zone) : nullptr;
    };
    walk_.emplace(a, target, now_, budget_, known);
    if (!walk_->done()) return;  // it needs a fetch
    zones_.emplace_back(target, walk_->result());
    ++next_target_;
  }
  evaluate();
}

void AnswerValidation::feed(std::span<const uint8_t> response) {
  if (done_ || !walk_) return;
  ++fetches_;
  walk_->feed(response);
  if (!walk_->done()) return;
  for (const auto& z : walk_->established())
    learned_.push_back(z);
  const ZoneKeys& r = walk_->result();
  if (r.security == Security::Insecure) learned_.push_back(r);
  zones_.emplace_back(targets_[next_target_], r);
  ++next_target_;
  next_walk();
}

const ZoneKeys* AnswerValidation::zone_for(const wire::Name& target) const {
  for (const auto& [t, z] : zones_)
    if (t == target) return &z;
  return nullptr;
}

void AnswerValidation::judge(Security s, Why why, uint32_t ttl) {
  // Bogus beats insecure beats secure; the first reason of the worst kind is kept.
  auto rank = [](Security x) { return x == Security::Bogus ? 2 : x == Security::Insecure ? 1 : 0; };
  if (rank(s) > rank(verdict_.security)) {
    verdict_.security = s;
    verdict_.why = why;
  } else if (rank(s) == rank(verdict_.security) && verdict_.why == Why::None) {
    verdict_.why = why;
  }
  verdict_.ttl = std::min(verdict_.ttl, ttl);
}

void AnswerValidation::evaluate() {
  done_ = true;
  walk_.reset();
  verdict_.security = Security::Secure;
  verdict_.why = Why::None;
  HashBudget hashes(kDefaultNsec3HashBudget);
  // The denial's proof, when it holds: exposed once every piece is judged, if all are secure.
  struct Proof {
    DenialRecords d;
    const ZoneKeys* z;
    bool by_nsec;
  };
  std::optional<Proof> proof;
  for (const Piece& p : pieces_) {
    const ZoneKeys* z = zone_for(p.target);
    if (z == nullptr) {
      judge(Security::Bogus, Why::Malformed, 0);
      continue;
    }
    if (z->security == Security::Bogus) {
      judge(Security::Bogus, z->why, 0);
      continue;
    }
    if (z->security == Security::Insecure) {
      judge(Security::Insecure, z->why, z->ttl);
      continue;
    }
    if (p.kind == Piece::Unsigned) {
      // Unsigned data (or an unsigned denial) in a zone proven signed.
      judge(Security::Bogus, p.set < answer_.size() ? Why::RrsigsMissing : Why::NsecMissing, 0);
      continue;
    }
    if (!(z->zone == p.target)) {
      // The signer named is no zone: no keys of its own.
      judge(Security::Bogus, Why::DnskeyMissing, 0);
      continue;
    }
    if (p.kind == Piece::Signed) {
      const SectionRrset& s = answer_[p.set];
      const CheckResult r = s.uncheckable ? CheckResult{Security::Bogus, Why::Malformed}
                                          : check_rrset(s.set, z->zone, z->keys, now_, budget_);
      if (r.security != Security::Secure) {
        judge(Security::Bogus, r.why, 0);
        continue;
      }
      judge(Security::Secure, Why::None, std::min(r.ttl, z->ttl));
      if (r.labels < s.set.owner.label_count()) {
        // From a wildcard: no closer name may exist (RFC 4035 §5.3.4, RFC 5155 §8.8).
        const DenialRecords d = checked_denial(m_, z->zone, z->keys, now_, budget_);
        const DenialVerdict v = either(
            d,
            d.nsec.empty() ? DenialVerdict::NotProven
                           : nsec_prove_wildcard_answer(d.nsec, s.set.owner, r.labels, z->zone),
            d.nsec3.empty()
                ? DenialVerdict::NotProven
                : nsec3_prove_wildcard_answer(d.nsec3, s.set.owner, r.labels, z->zone, hashes));
        if (v == DenialVerdict::Proven) continue;
        if (v == DenialVerdict::ProvenInsecure) {
          judge(Security::Insecure, Why::None, d.ttl);
        } else if (v == DenialVerdict::IterationsTooHigh) {
          judge(Security::Insecure, Why::Nsec3Iterations, d.ttl);
        } else {
          judge(Security::Bogus,
                v == DenialVerdict::BudgetExhausted ? Why::BudgetExhausted : Why::NsecMissing, 0);
        }
      }
      continue;
    }
    // A denial for the last name of the chain, with the zone's NSEC or NSEC3 records.
    DenialRecords d = checked_denial(m_, z->zone, z->keys, now_, budget_);
    const DenialVerdict by_nsec = d.nsec.empty() ? DenialVerdict::NotProven
                                  : nxdomain_
                                      ? nsec_prove_nxdomain(d.nsec, denial_name_, z->zone)
                                      : nsec_prove_nodata(d.nsec, denial_name_, qtype_, z->zone);
    const DenialVerdict by_nsec3 =
        d.nsec3.empty() ? DenialVerdict::NotProven
        : nxdomain_     ? nsec3_prove_nxdomain(d.nsec3, denial_name_, z->zone, hashes)
                        : nsec3_prove_nodata(d.nsec3, denial_name_, qtype_, z->zone, hashes);
    const DenialVerdict v = either(d, by_nsec, by_nsec3);
    switch (v) {
      case DenialVerdict::Proven:
        judge(Security::Secure, Why::None, std::min(d.ttl, z->ttl));
        proof = Proof{std::move(d), z, by_nsec == DenialVerdict::Proven};
        break;
      case DenialVerdict::ProvenInsecure:
        judge(Security::Insecure, Why::None, d.ttl);
        break;
      case DenialVerdict::IterationsTooHigh:
        judge(Security::Insecure, Why::Nsec3Iterations, d.ttl);
        break;
      case DenialVerdict::BudgetExhausted:
        judge(Security::Bogus, Why::BudgetExhausted, 0);
        break;
      case DenialVerdict::NotProven:
        judge(Security::Bogus, d.why != Why::None ? d.why : Why::NsecMissing, 0);
        break;
    }
  }
  if (verdict_.security != Security::Secure) verdict_.ttl = 0;
  if (verdict_.security == Security::Secure && proof)
    expose_denial(proof->d, *proof->z, proof->by_nsec);
}

void AnswerValidation::expose_denial(const DenialRecords& d, const ZoneKeys& z, bool by_nsec) {
  // A real denial needs at most 3 NSEC3 RRsets (RFC 5155 §7.2.2) or 3 NSEC RRsets (a
  // wildcard NODATA); a response with many more is not narrowed down, only validated.
  constexpr std::size_t kMaxProofSets = 8;
  const uint16_t want = by_nsec ? kTypeNsec : kTypeNsec3;
  std::vector<const CheckedRrset*> sets;
  for (const auto& s : d.sets)
    if (s.set.type == want) sets.push_back(&s);
  if (sets.empty() || sets.size() > kMaxProofSets) return;
  // Narrowed to the RRsets the proof needs: each left out in turn, and kept only if the proof
  // fails without it. NSEC3 hashing for it has one budget of its own, the size of a response's.
  HashBudget hashes(kDefaultNsec3HashBudget);
  bool exhausted = false;
  std::vector<bool> keep(sets.size(), true);
  auto proves = [&]() {
    std::vector<NsecRecord> nsec;
    std::vector<Nsec3Record> nsec3;
    for (std::size_t i = 0; i < sets.size(); ++i) {
      if (!keep[i]) continue;
      for (const auto& rdata : sets[i]->set.rdatas) {
        if (by_nsec) {
          nsec.push_back(NsecRecord{sets[i]->set.owner, rdata});
        } else {
          nsec3.push_back(Nsec3Record{sets[i]->set.owner, rdata});
        }
      }
    }
    const DenialVerdict v =
        by_nsec     ? (nxdomain_ ? nsec_prove_nxdomain(nsec, denial_name_, z.zone)
                                 : nsec_prove_nodata(nsec, denial_name_, qtype_, z.zone))
        : nxdomain_ ? nsec3_prove_nxdomain(nsec3, denial_name_, z.zone, hashes)
                    : nsec3_prove_nodata(nsec3, denial_name_, qtype_, z.zone, hashes);
    if (v == DenialVerdict::BudgetExhausted) exhausted = true;
    return v == DenialVerdict::Proven;
  };
  if (!proves()) return;
  for (std::size_t i = 0; i < sets.size() && !exhausted; ++i) {
    keep[i] = false;
    if (!proves()) keep[i] = true;
  }
  if (exhausted) return;
  // The SOA gives the negative TTL (RFC 2308 §5): checked too, with a small budget of its own
  // so that the verdict's is untouched. Its MINIMUM is the last 4 octets of the RDATA.
  std::optional<CheckedRrset> soa;
  for (const auto& s : section_rrsets(m_, wire::Section::Authority)) {
    if (s.set.type != kTypeSoa || !(s.set.owner == z.zone) || s.uncheckable) continue;
    if (s.set.rdatas.size() != 1 || s.set.rdatas[0].size() < 22) return;
    Budget budget{4, 2};
    const CheckResult r = check_rrset(s.set, z.zone, z.keys, now_, budget);
    if (r.security != Security::Secure) return;
    soa = CheckedRrset{s.set, r.ttl, r.key_tag};
    break;
  }
  if (!soa) return;
  const auto& soa_rdata = soa->set.rdatas[0];
  const std::size_t at = soa_rdata.size() - 4;
  const uint32_t minimum = base::load_u32(&soa_rdata[at]);
  ProvenDenial p;
  p.zone = z.zone.lowercased();
  p.qname = denial_name_;
  p.qtype = qtype_;
  p.nxdomain = nxdomain_;
  p.nsec3 = !by_nsec;
  p.ttl = std::min({z.ttl, soa->ttl, soa->set.ttl, minimum});
  // Only the RRSIGs of the key that verified each RRset: the others were never checked.
  auto own_rrsigs = [&](CheckedRrset c) {
    std::vector<std::vector<uint8_t>> sigs;
    for (auto& raw : c.set.rrsigs) {
      const auto sig = parse_rrsig(raw);
      if (sig && sig->key_tag == c.key_tag && sig->signer == z.zone &&
          sig->type_covered == c.set.type)
        sigs.push_back(std::move(raw));
    }
    c.set.rrsigs = std::move(sigs);
    return c;
  };
  p.soa = own_rrsigs(*soa);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (!keep[i]) continue;
    p.records.push_back(own_rrsigs(*sets[i]));
    p.ttl = std::min(p.ttl, sets[i]->ttl);
  }
  if (p.ttl == 0) return;
  proven_ = std::move(p);
}

}  // namespace hg::dnssec
