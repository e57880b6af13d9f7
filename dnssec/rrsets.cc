#include "dnssec/rrsets.h"

#include <span>

#include "base/bytes.h"
#include "dnssec/signed_data.h"

namespace hg::dnssec {

namespace {

constexpr uint16_t kTypeRrsig = 46;

}  // namespace

std::vector<SectionRrset> section_rrsets(const wire::Message& m, wire::Section s,
                                         std::size_t limit) {
  std::vector<SectionRrset> out;
  const auto records = m.section(s);
  auto find = [&](const wire::Name& owner, uint16_t type, uint16_t klass) -> SectionRrset* {
    for (auto& r : out)
      if (r.set.type == type && r.set.klass == klass && r.set.owner == owner) return &r;
    return nullptr;
  };
  // Every RRset first, then the RRSIGs: an RRSIG may come before the records it covers.
  for (const auto& rr : records) {
    const auto type = static_cast<uint16_t>(rr.type);
    if (type == kTypeRrsig) continue;
    const wire::Name owner = m.owner(rr);
    SectionRrset* r = find(owner, type, rr.klass);
    if (r == nullptr) {
      if (out.size() >= limit) continue;
      out.push_back(SectionRrset{Rrset{owner, type, rr.klass, rr.ttl, {}, {}}, false});
      r = &out.back();
    }
    r->set.ttl = std::min(r->set.ttl, rr.ttl);
    auto canonical = canonical_rdata(m, rr);
    if (canonical) {
      r->set.rdatas.push_back(std::move(*canonical));
    } else {
      r->uncheckable = true;
    }
  }
  for (const auto& rr : records) {
    if (static_cast<uint16_t>(rr.type) != kTypeRrsig || rr.rdlength < 2) continue;
    const auto rdata = m.packet().subspan(rr.rdata_offset, rr.rdlength);
    const auto covered = base::load_u16(&rdata[0]);
    SectionRrset* r = find(m.owner(rr), covered, rr.klass);
    if (r != nullptr) r->set.rrsigs.emplace_back(rdata.begin(), rdata.end());
  }
  return out;
}

}  // namespace hg::dnssec
