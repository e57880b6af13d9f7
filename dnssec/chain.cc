#include "dnssec/chain.h"

#include <algorithm>
#include <limits>

#include "dnssec/denial.h"
#include "dnssec/rrsets.h"

namespace hg::dnssec {

namespace {

constexpr uint16_t kTypeRrsetDnskey = 48;
constexpr uint16_t kTypeNsec = 47;
constexpr uint16_t kTypeNsec3 = 50;
constexpr uint32_t kNoTtl = std::numeric_limits<uint32_t>::max();

const SectionRrset* find_set(const std::vector<SectionRrset>& sets, const wire::Name& owner,
                             uint16_t type) {
  for (const auto& s : sets)
    if (s.set.type == type && s.set.owner == owner) return &s;
  return nullptr;
}

}  // namespace

DenialRecords checked_denial(const wire::Message& m, const wire::Name& zone,
                             std::span<const std::vector<uint8_t>> keys, int64_t now,
                             Budget& budget) {
  DenialRecords out;
  for (const auto& s : section_rrsets(m, wire::Section::Authority)) {
    if (s.set.type != kTypeNsec && s.set.type != kTypeNsec3) continue;
    // An NSEC or NSEC3 outside the zone says nothing about it (and its RRSIG would not be
    // the zone's): left out, not held against the answer.
    if (!s.set.owner.is_subdomain_of(zone)) continue;
    const CheckResult r = s.uncheckable ? CheckResult{Security::Bogus, Why::Malformed}
                                        : check_rrset(s.set, zone, keys, now, budget);
    if (r.security != Security::Secure) {
      if (out.why == Why::None) out.why = r.why;
      continue;
    }
    out.ttl = std::min(out.ttl, r.ttl);
    out.sets.push_back(CheckedRrset{s.set, r.ttl, r.key_tag});
    for (const auto& rdata : s.set.rdatas) {
      if (s.set.type == kTypeNsec) {
        out.nsec.push_back(NsecRecord{s.set.owner, rdata});
      } else {
        out.nsec3.push_back(Nsec3Record{s.set.owner, rdata});
      }
    }
  }
  return out;
}

ChainWalk::ChainWalk(const Anchor& anchor, const wire::Name& target, int64_t now, Budget& budget,
                     const Known& known)
    : target_(target), now_(now), budget_(budget) {
  if (!target.is_subdomain_of(anchor.zone)) {
    finish(Security::Bogus, Why::Malformed, target);
    return;
  }
  // Start from the deepest zone already known at or above the target.
  if (known) {
    const int below = target.label_count() - anchor.zone.label_count();
    for (int cut = 0; cut <= below; ++cut) {
      const ZoneKeys* k = known(target.parent(cut));
      if (k == nullptr || k->security == Security::Bogus) continue;
      if (k->security == Security::Insecure) {
        result_ = *k;
        done_ = true;
        return;
      }
      current_ = *k;
      descend(current_.zone);
      return;
    }
  }
  pending_ = anchor.zone;
  pending_ds_ = anchor.ds;
  pending_ttl_ = kNoTtl;
  ask(anchor.zone, kTypeRrsetDnskey);
}

void ChainWalk::ask(const wire::Name& name, uint16_t type) {
  if (++fetches_ > kMaxFetches) {
    finish(Security::Bogus, Why::BudgetExhausted, name);
    return;
  }
  need_ = Fetch{name, type};
}

void ChainWalk::finish(Security s, Why why, const wire::Name& zone) {
  done_ = true;
  result_.security = s;
  result_.why = why;
  result_.zone = zone;
  if (s != Security::Secure) result_.keys.clear();
}

void ChainWalk::descend(const wire::Name& from) {
  if (from == target_) {
    // The target is the current zone, or a name in it that is no zone cut.
    result_ = current_;
    done_ = true;
    return;
  }
  probe_ = target_.parent(target_.label_count() - from.label_count() - 1);
  ask(probe_, kTypeDs);
}

void ChainWalk::feed(std::span<const uint8_t> response) {
  if (done_) return;
  wire::Message m;
  if (response.empty() || !m.parse(response) || !m.header().qr()) {
    finish(Security::Bogus, Why::FetchFailed, need_.name);
    return;
  }
  const wire::RCode rcode = m.rcode();
  if (rcode != wire::RCode::NoError && rcode != wire::RCode::NXDomain) {
    finish(Security::Bogus, Why::FetchFailed, need_.name);
    return;
  }
  if (need_.type == kTypeRrsetDnskey) {
    on_dnskey(m);
  } else {
    on_ds(m);
  }
}

void ChainWalk::on_dnskey(const wire::Message& m) {
  const auto answer = section_rrsets(m, wire::Section::Answer);
  const SectionRrset* keys = find_set(answer, pending_, kTypeRrsetDnskey);
  if (keys == nullptr || keys->uncheckable) {
    finish(Security::Bogus, Why::DnskeyMissing, pending_);
    return;
  }
  const CheckResult r = check_dnskeys(keys->set, pending_ds_, now_, budget_);
  if (r.security == Security::Insecure) {
    result_.ttl = std::min(pending_ttl_, keys->set.ttl);
    finish(Security::Insecure, r.why, pending_);
    return;
  }
  if (r.security != Security::Secure) {
    finish(Security::Bogus, r.why, pending_);
    return;
  }
  current_ = ZoneKeys{pending_, Security::Secure, Why::None, keys->set.rdatas,
                      std::min(pending_ttl_, r.ttl)};
  established_.push_back(current_);
  descend(current_.zone);
}

void ChainWalk::on_ds(const wire::Message& m) {
  const auto answer = section_rrsets(m, wire::Section::Answer);
  if (const SectionRrset* ds = find_set(answer, probe_, kTypeDs); ds != nullptr) {
    // A DS RRset: signed by the zone above, it vouches for the keys below (RFC 4035 §5.2).
    const CheckResult r = ds->uncheckable
                              ? CheckResult{Security::Bogus, Why::Malformed}
                              : check_rrset(ds->set, current_.zone, current_.keys, now_, budget_);
    if (r.security != Security::Secure) {
      finish(Security::Bogus, r.why, probe_);
      return;
    }
    pending_ = probe_;
    pending_ds_ = ds->set.rdatas;
    pending_ttl_ = std::min(current_.ttl, r.ttl);
    ask(probe_, kTypeRrsetDnskey);
    return;
  }
  if (find_set(answer, probe_, 5) != nullptr) {
    // A CNAME: the name is an alias in the zone above, no zone cut, and nothing lies below
    // an alias (RFC 1034 §3.6.2): the target is in the current zone.
    result_ = current_;
    done_ = true;
    return;
  }
  // No DS: the zone above must prove it, with NSEC or NSEC3 it signed.
  const DenialRecords d = checked_denial(m, current_.zone, current_.keys, now_, budget_);
  if (d.why == Why::BudgetExhausted) {
    finish(Security::Bogus, Why::BudgetExhausted, probe_);
    return;
  }
  HashBudget hashes(kDefaultNsec3HashBudget);
  auto verdict = [&](DenialVerdict nsec, DenialVerdict nsec3) {
    if (nsec == DenialVerdict::Proven || nsec3 == DenialVerdict::Proven)
      return DenialVerdict::Proven;
    if (nsec3 == DenialVerdict::ProvenInsecure) return DenialVerdict::ProvenInsecure;
    return d.nsec3.empty() ? nsec : nsec3;
  };
  const auto none = DenialVerdict::NotProven;
  // A delegation without DS: insecure from here down (RFC 4035 §5.2); Opt-Out may hide one.
  const DenialVerdict delegation = verdict(
      d.nsec.empty() ? none : nsec_prove_insecure_delegation(d.nsec, probe_, current_.zone),
      d.nsec3.empty() ? none
                      : nsec3_prove_insecure_delegation(d.nsec3, probe_, current_.zone, hashes));
  if (delegation == DenialVerdict::Proven || delegation == DenialVerdict::ProvenInsecure) {
    result_.ttl = std::min(current_.ttl, d.ttl);
    finish(Security::Insecure, Why::None, probe_);
    return;
  }
  if (delegation == DenialVerdict::IterationsTooHigh) {
    result_.ttl = std::min(current_.ttl, d.ttl);
    finish(Security::Insecure, Why::Nsec3Iterations, probe_);
    return;
  }
  if (delegation == DenialVerdict::BudgetExhausted) {
    finish(Security::Bogus, Why::BudgetExhausted, probe_);
    return;
  }
  // The name exists (or is an empty non-terminal) without DS and is no delegation: no zone
  // cut here, one label further down.
  const DenialVerdict nodata = verdict(
      d.nsec.empty() ? none : nsec_prove_nodata(d.nsec, probe_, kTypeDs, current_.zone),
      d.nsec3.empty() ? none : nsec3_prove_nodata(d.nsec3, probe_, kTypeDs, current_.zone, hashes));
  if (nodata == DenialVerdict::Proven) {
    descend(probe_);
    return;
  }
  // The name does not exist: neither does anything below it, so the target is in the
  // current zone (and an answer that says otherwise will not check against its keys).
  const DenialVerdict nxdomain = verdict(
      d.nsec.empty() ? none : nsec_prove_nxdomain(d.nsec, probe_, current_.zone),
      d.nsec3.empty() ? none : nsec3_prove_nxdomain(d.nsec3, probe_, current_.zone, hashes));
  if (nxdomain == DenialVerdict::Proven) {
    result_ = current_;
    done_ = true;
    return;
  }
  if (nxdomain == DenialVerdict::ProvenInsecure) {
    // Opt-Out: an unsigned delegation may be hidden there (RFC 5155 §9.2).
    result_.ttl = std::min(current_.ttl, d.ttl);
    finish(Security::Insecure, Why::None, probe_);
    return;
  }
  if (nodata == DenialVerdict::BudgetExhausted || nxdomain == DenialVerdict::BudgetExhausted) {
    finish(Security::Bogus, Why::BudgetExhausted, probe_);
    return;
  }
  finish(Security::Bogus, d.why != Why::None ? d.why : Why::NsecMissing, probe_);
}

}  // namespace hg::dnssec
