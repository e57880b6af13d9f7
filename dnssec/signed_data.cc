#include "dnssec/signed_data.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <variant>

#include "base/bytes.h"
#include "wire/rdata.h"
#include "wire/types.h"
#include "wire/writer.h"

namespace hg::dnssec {

namespace {

constexpr std::size_t kRrsigFixed = 18;  // type covered .. key tag (RFC 4034 §3.1)

// Types of RFC 4034 §6.2's list (less NSEC, RFC 6840 §5.1) whose RDATA names wire/rdata.h
// does not decode: their canonical form cannot be made here.
bool names_not_decoded(uint16_t type) noexcept {
  switch (type) {
    case 3:   // MD
    case 4:   // MF
    case 7:   // MB
    case 8:   // MG
    case 9:   // MR
    case 14:  // MINFO
    case 17:  // RP
    case 18:  // AFSDB
    case 21:  // RT
    case 24:  // SIG
    case 26:  // PX
    case 30:  // NXT
    case 35:  // NAPTR
    case 36:  // KX
    case 38:  // A6
    case 46:  // RRSIG
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<Rrsig> parse_rrsig(std::span<const uint8_t> rdata) {
  if (rdata.size() < kRrsigFixed + 1) return std::nullopt;
  Rrsig s;
  s.type_covered = base::load_u16(rdata.data());
  s.algorithm = rdata[2];
  s.labels = rdata[3];
  s.original_ttl = base::load_u32(rdata.data() + 4);
  s.expiration = base::load_u32(rdata.data() + 8);
  s.inception = base::load_u32(rdata.data() + 12);
  s.key_tag = base::load_u16(rdata.data() + 16);
  // The signer's name, uncompressed (§3.1.7): labels up to the root, no pointers.
  std::size_t at = kRrsigFixed;
  while (at < rdata.size() && rdata[at] != 0) {
    if (rdata[at] > 63) return std::nullopt;  // a pointer or a reserved label type
    at += 1 + std::size_t{rdata[at]};
  }
  if (at >= rdata.size()) return std::nullopt;
  auto signer = wire::Name::from_wire(rdata.subspan(kRrsigFixed, at + 1 - kRrsigFixed));
  if (!signer) return std::nullopt;
  s.signer = *signer;
  s.signature = rdata.subspan(at + 1);
  if (s.signature.empty()) return std::nullopt;
  return s;
}

std::optional<std::vector<uint8_t>> canonical_rdata(const wire::Message& m,
                                                    const wire::RecordView& rr) {
  const auto type = static_cast<uint16_t>(rr.type);
  if (names_not_decoded(type)) return std::nullopt;
  const auto raw = m.packet().subspan(rr.rdata_offset, rr.rdlength);
  if (!wire::rdata_has_names(rr.type)) return std::vector<uint8_t>(raw.begin(), raw.end());
  auto rdata = wire::read_rdata(m, rr);
  if (!rdata) return std::nullopt;
  // Every name lowercased (RFC 4034 §6.2 item 3), written uncompressed.
  std::visit(
      [](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, wire::RdataName>) {
          r.name = r.name.lowercased();
        } else if constexpr (std::is_same_v<T, wire::RdataMX>) {
          r.exchange = r.exchange.lowercased();
        } else if constexpr (std::is_same_v<T, wire::RdataSRV>) {
          r.target = r.target.lowercased();
        } else if constexpr (std::is_same_v<T, wire::RdataSOA>) {
          r.mname = r.mname.lowercased();
          r.rname = r.rname.lowercased();
        }
      },
      *rdata);
  std::array<uint8_t, 2 * wire::kMaxNameOctets + 32> buf;
  wire::WireWriter w(buf);
  // The writer compresses only against names it has written, and each name here is the
  // first of its kind in `buf` but SOA's second: write without compression throughout.
  bool ok = true;
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, wire::RdataName>) {
          ok = w.name(r.name, false);
        } else if constexpr (std::is_same_v<T, wire::RdataMX>) {
          ok = w.u16(r.preference) && w.name(r.exchange, false);
        } else if constexpr (std::is_same_v<T, wire::RdataSRV>) {
          ok = w.u16(r.priority) && w.u16(r.weight) && w.u16(r.port) && w.name(r.target, false);
        } else if constexpr (std::is_same_v<T, wire::RdataSOA>) {
          ok = w.name(r.mname, false) && w.name(r.rname, false) && w.u32(r.serial) &&
               w.u32(r.refresh) && w.u32(r.retry) && w.u32(r.expire) && w.u32(r.minimum);
        } else {
          ok = false;  // rdata_has_names() said it holds a name: a type not handled above
        }
      },
      *rdata);
  if (!ok) return std::nullopt;
  const auto out = w.written();
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::optional<std::vector<uint8_t>> signed_data(const Rrsig& sig, const wire::Name& owner,
                                                uint16_t type, uint16_t klass,
                                                std::vector<std::vector<uint8_t>> rdatas) {
  const int owner_labels = owner.label_count();
  if (sig.labels > owner_labels) return std::nullopt;
  wire::Name name = owner.lowercased();
  if (sig.labels < owner_labels) {
    // A wildcard expansion (RFC 4035 §5.3.2): the owner the signature was made for is
    // "*." and the owner's rightmost Labels labels.
    const wire::Name closest = name.parent(owner_labels - sig.labels);
    std::array<uint8_t, wire::kMaxNameOctets + 2> star{1, '*'};
    const auto tail = closest.wire();
    if (tail.size() + 2 > wire::kMaxNameOctets) return std::nullopt;
    std::copy(tail.begin(), tail.end(), star.begin() + 2);
    auto wild = wire::Name::from_wire(std::span<const uint8_t>(star.data(), tail.size() + 2));
    if (!wild) return std::nullopt;
    name = *wild;
  }
  // RFC 4034 §6.3: as unsigned octet strings, a shorter one before a longer one it begins.
  // (Compared by hand: g++ 14 at -O3 warns falsely on std::vector's operator<=> here.)
  auto before = [](const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
    const std::size_t n = std::min(x.size(), y.size());
    const int c = n == 0 ? 0 : std::memcmp(x.data(), y.data(), n);
    return c != 0 ? c < 0 : x.size() < y.size();
  };
  std::sort(rdatas.begin(), rdatas.end(), before);
  rdatas.erase(std::unique(rdatas.begin(), rdatas.end()), rdatas.end());

  std::vector<uint8_t> out;
  const wire::Name signer = sig.signer.lowercased();
  std::size_t size = kRrsigFixed + signer.size();
  for (const auto& r : rdatas)
    size += name.size() + 10 + r.size();
  out.reserve(size);
  base::append_u16(out, sig.type_covered);
  out.push_back(sig.algorithm);
  out.push_back(sig.labels);
  base::append_u32(out, sig.original_ttl);
  base::append_u32(out, sig.expiration);
  base::append_u32(out, sig.inception);
  base::append_u16(out, sig.key_tag);
  out.insert(out.end(), signer.wire().begin(), signer.wire().end());
  for (const auto& r : rdatas) {
    if (r.size() > 0xffff) return std::nullopt;
    out.insert(out.end(), name.wire().begin(), name.wire().end());
    base::append_u16(out, type);
    base::append_u16(out, klass);
    base::append_u32(out, sig.original_ttl);
    base::append_u16(out, static_cast<uint16_t>(r.size()));
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

}  // namespace hg::dnssec
