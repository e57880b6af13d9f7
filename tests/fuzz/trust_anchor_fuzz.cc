// libFuzzer target for the trust anchor file parser (dnssec/trust_anchor.h): the whole input
// is the text of a file. A trust anchor file is operator-written, but the parser must still
// never crash on it, and what it accepts is what the validator trusts.
//
// Properties, each an abort when violated:
//  1. A refused text gives a one-line message that begins with the file's name and a colon
//     (then the line number, or a space for the whole file).
//  2. Parsing is deterministic: the same text gives the same anchors or the same message.
//  3. Every anchor has the fixed fields its type needs: a DS RDATA is 4 octets and a digest,
//     with algorithm and digest type not 0, and a digest of the length its digest type has
//     (SHA-1 20, SHA-256 and GOST 32, SHA-384 48); a DNSKEY RDATA is 4 octets and a key, with
//     protocol 3, algorithm not 0, the Zone Key flag and not REVOKE; RDATAs fit 65535 octets.
//  4. Zones are lowercased and in strictly increasing canonical order, each with at least one
//     anchor; a zone's RDATAs are sorted and distinct; there are at most 1000 anchors.
//  5. to_text() parses back to the same anchors, and writes that text again.
//  6. closest() of a zone and of a name just below it is that zone; find() agrees.
//  7. Each DNSKEY's SHA-256 DS (ds_of_dnskey) matches the key (ds_matches).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "dnssec/crypto.h"
#include "dnssec/trust_anchor.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/name.h"

namespace {

using namespace hg;
using hg::fuzz::check;

constexpr std::string_view kSource = "fuzz.key";

std::size_t digest_octets(uint8_t type) {
  switch (type) {
    case 1:
      return 20;
    case 2:
    case 3:
      return 32;
    case 4:
      return 48;
    default:
      return 0;
  }
}

bool before(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  const int c = n == 0 ? 0 : std::memcmp(x.data(), y.data(), n);
  return c != 0 ? c < 0 : x.size() < y.size();
}

void check_sorted(const std::vector<std::vector<uint8_t>>& v) {
  for (std::size_t i = 1; i < v.size(); ++i)
    check(before(v[i - 1], v[i]), "RDATAs sorted and distinct");
}

void check_anchors(const dnssec::TrustAnchors& t) {
  check(!t.empty() && t.count() <= dnssec::kMaxTrustAnchors, "1 to 1000 anchors");
  const auto& zones = t.zones();
  for (std::size_t i = 0; i < zones.size(); ++i) {
    const dnssec::ZoneAnchors& z = zones[i];
    check(z.zone.identical(z.zone.lowercased()), "zone lowercased");
    check(i == 0 || zones[i - 1].zone < z.zone, "zones in increasing canonical order");
    check(!z.ds.empty() || !z.dnskey.empty(), "a zone has anchors");
    check_sorted(z.ds);
    check_sorted(z.dnskey);
    for (const auto& ds : z.ds) {
      check(ds.size() > 4 && ds.size() <= 65535, "DS RDATA size");
      check(ds[2] != 0 && ds[3] != 0, "DS algorithm and digest type not 0");
      const std::size_t want = digest_octets(ds[3]);
      check(want == 0 || ds.size() == 4 + want, "DS digest length fits its digest type");
    }
    for (const auto& key : z.dnskey) {
      check(key.size() > 4 && key.size() <= 65535, "DNSKEY RDATA size");
      const auto flags = base::load_u16(&key[0]);
      check((flags & dnssec::kDnskeyZoneFlag) != 0, "DNSKEY has the Zone Key flag");
      check((flags & dnssec::kDnskeyRevokeFlag) == 0, "DNSKEY not revoked");
      check(key[2] == 3 && key[3] != 0, "DNSKEY protocol 3, algorithm not 0");
      const auto ds = dnssec::ds_of_dnskey(z.zone, key, 2);
      check(ds.has_value() && dnssec::ds_matches(z.zone, key, *ds) == dnssec::DsMatch::Match,
            "a key's own DS matches it");
    }
    check(t.find(z.zone) == &z, "find() gives the zone");
    check(t.closest(z.zone) == &z, "closest() of a zone is the zone");
    // A name one label below; when a deeper anchored zone is that name, closest() is it.
    const auto child = wire::Name::from_text(z.zone.is_root() ? std::string("fuzz-child.")
                                                              : "fuzz-child." + z.zone.to_text());
    if (child) {
      const dnssec::ZoneAnchors* c = t.closest(*child);
      check(c == &z || (c != nullptr && c->zone == *child), "closest() of a name below");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = dnssec::parse_trust_anchors(text, kSource);
  const auto again = dnssec::parse_trust_anchors(text, kSource);
  check(r.has_value() == again.has_value(), "deterministic: same outcome");
  if (!r) {
    const std::string& e = r.error();
    check(e == again.error(), "deterministic: same message");
    check(e.size() > kSource.size() + 1 && e.starts_with(kSource) && e[kSource.size()] == ':',
          "message begins with the file's name");
    check(e.find('\n') == std::string::npos, "message is one line");
    return 0;
  }
  check(*r == *again, "deterministic: same anchors");
  check_anchors(*r);
  const std::string out = r->to_text();
  const auto back = dnssec::parse_trust_anchors(out, kSource);
  check(back.has_value() && *back == *r, "to_text() parses back to the same anchors");
  check(back->to_text() == out, "to_text() of the parsed text is the text");
  return 0;
}
