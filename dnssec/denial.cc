#include "dnssec/denial.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/bytes.h"

namespace hg::dnssec {

namespace {

constexpr std::size_t kMaxWindowBitmap = 32;  // RFC 4034 §4.1.2: 256 types, 32 octets
constexpr std::string_view kBase32Hex = "0123456789abcdefghijklmnopqrstuv";  // RFC 4648 §7
// 20 octets are 160 bits, 32 characters of 5 bits each: no padding, nothing left over.
constexpr std::size_t kNsec3LabelSize = 32;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};

// An uncompressed name at `at` in `rdata` (RFC 4034 §4.1.1 forbids compressing NSEC's Next
// Domain Name): labels up to the root, no pointers. Advances `at` past it.
std::optional<wire::Name> read_uncompressed_name(std::span<const uint8_t> rdata, std::size_t& at) {
  const std::size_t start = at;
  std::size_t i = at;
  while (i < rdata.size() && rdata[i] != 0) {
    if (rdata[i] > wire::kMaxLabelOctets) return std::nullopt;  // a pointer or reserved type
    i += 1 + std::size_t{rdata[i]};
    if (i - start >= wire::kMaxNameOctets) return std::nullopt;
  }
  if (i >= rdata.size()) return std::nullopt;
  auto name = wire::Name::from_wire(rdata.subspan(start, i + 1 - start));
  if (!name) return std::nullopt;
  at = i + 1;
  return *name;
}

int base32hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'v') return c - 'a' + 10;
  if (c >= 'A' && c <= 'V') return c - 'A' + 10;
  return -1;
}

// The longest ancestor `a` and `b` share (both in the same tree, so at least the root).
int common_labels(const wire::Name& a, const wire::Name& b) noexcept {
  const int na = a.label_count();
  const int nb = b.label_count();
  int n = std::min(na, nb);
  while (n > 0 && !(a.parent(na - n) == b.parent(nb - n)))
    --n;
  return n;
}

// RFC 6840 §4.1: an NSEC or NSEC3 at a zone cut's parent side (NS without SOA) or at a DNAME
// says nothing about names below its owner: they are in another zone, or redirected.
bool cuts_below(const TypeBitmap& types) noexcept {
  return types.has(kTypeDname) || (types.has(kTypeNs) && !types.has(kTypeSoa));
}

// What a record at `name` without `qtype` proves for a NODATA (RFC 4035 §5.4, RFC 5155
// §8.5 and §8.6, RFC 6840 §4.1 and §4.3).
bool denies_type(const TypeBitmap& types, const wire::Name& name, uint16_t qtype) noexcept {
  if (types.has(qtype) || types.has(kTypeCname)) return false;
  if (qtype == kTypeDs) {
    // The DS of `name` is in the parent zone: a record with SOA is the child's apex, signed
    // by the child, which cannot speak for its parent. The root has no parent.
    return !types.has(kTypeSoa) || name.is_root();
  }
  // At a delegation's parent side only DS (and NSEC, RRSIG) are the parent's: every other
  // type lives in the child.
  return !(types.has(kTypeNs) && !types.has(kTypeSoa));
}

// --- NSEC ---

struct UsableNsec {
  const wire::Name* owner;
  Nsec rr;
};

// The NSECs that parse and lie (owner and next) in `zone`: RFC 4035 §5.3.1 has the signer be
// the owner's zone, and the last next name is the zone's apex (RFC 4034 §4.1.1).
std::vector<UsableNsec> usable_nsecs(std::span<const NsecRecord> nsecs, const wire::Name& zone) {
  std::vector<UsableNsec> out;
  out.reserve(nsecs.size());
  for (const auto& r : nsecs) {
    auto p = parse_nsec(r.rdata);
    if (!p || !r.owner.is_subdomain_of(zone) || !p->next.is_subdomain_of(zone)) continue;
    out.push_back({&r.owner, *p});
  }
  return out;
}

const UsableNsec* nsec_at(const std::vector<UsableNsec>& nsecs, const wire::Name& name) {
  for (const auto& n : nsecs)
    if (nsec_matches(*n.owner, name)) return &n;
  return nullptr;
}

// An NSEC that proves `name` does not exist: it covers it, and its owner is not a zone cut or
// DNAME above `name` (RFC 6840 §4.1).
const UsableNsec* nsec_denying(const std::vector<UsableNsec>& nsecs, const wire::Name& name) {
  for (const auto& n : nsecs) {
    if (!nsec_covers(*n.owner, n.rr.next, name)) continue;
    if (name.is_subdomain_of(*n.owner) && cuts_below(n.rr.types)) continue;
    return &n;
  }
  return nullptr;
}

// --- NSEC3 ---

struct UsableNsec3 {
  Nsec3Hash owner;
  Nsec3 rr;
};

// Records of one set of parameters (RFC 5155 §7.3: a chain), and the hashes made for it.
struct Chain {
  uint16_t iterations = 0;
  std::span<const uint8_t> salt;
  std::vector<UsableNsec3> records;
  std::vector<std::pair<wire::Name, Nsec3Hash>> hashed;
};

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

std::vector<Chain> chains_of(std::span<const Nsec3Record> nsec3s, const wire::Name& zone) {
  std::vector<Chain> chains;
  for (const auto& r : nsec3s) {
    auto p = parse_nsec3(r.rdata);
    // RFC 5155 §8.1: unknown hash algorithms are ignored; §8.2: so are unknown flags.
    if (!p || p->hash_algorithm != kNsec3Sha1 || (p->flags & ~kNsec3OptOut) != 0 ||
        p->next_hashed.size() != kNsec3HashSize)
      continue;
    auto owner = nsec3_owner_hash(r.owner, zone);
    if (!owner) continue;
    auto c = std::find_if(chains.begin(), chains.end(), [&](const Chain& x) {
      return x.iterations == p->iterations && same_bytes(x.salt, p->salt);
    });
    if (c == chains.end()) {
      chains.push_back(Chain{p->iterations, p->salt, {}, {}});
      c = chains.end() - 1;
    }
    c->records.push_back({*owner, *p});
  }
  return chains;
}

// Hashes for one chain, drawing on the budget.
class Hasher {
 public:
  Hasher(Chain& chain, HashBudget& budget) : chain_(chain), budget_(budget) {}

  // nullopt when the budget is spent (exhausted() then) or OpenSSL fails.
  std::optional<Nsec3Hash> operator()(const wire::Name& name) {
    for (const auto& [n, h] : chain_.hashed)
      if (n == name) return h;
    if (!budget_.take(std::size_t{chain_.iterations} + 1)) {
      exhausted_ = true;
      return std::nullopt;
    }
    auto h = nsec3_hash(name, chain_.salt, chain_.iterations);
    if (h) chain_.hashed.emplace_back(name, *h);
    return h;
  }
  bool exhausted() const noexcept { return exhausted_; }
  // What a proof that could not hash says.
  DenialVerdict failed() const noexcept {
    return exhausted_ ? DenialVerdict::BudgetExhausted : DenialVerdict::NotProven;
  }

 private:
  Chain& chain_;
  HashBudget& budget_;
  bool exhausted_ = false;
};

const UsableNsec3* nsec3_matching(const Chain& c, const Nsec3Hash& h) {
  for (const auto& r : c.records)
    if (r.owner == h) return &r;
  return nullptr;
}

// A record covering `h`; one without Opt-Out if there is one (the stronger proof).
const UsableNsec3* nsec3_covering(const Chain& c, const Nsec3Hash& h) {
  const UsableNsec3* opt_out = nullptr;
  for (const auto& r : c.records) {
    if (!nsec3_covers(r.owner, r.rr.next_hashed, h)) continue;
    if (!r.rr.opt_out()) return &r;
    if (opt_out == nullptr) opt_out = &r;
  }
  return opt_out;
}

// RFC 5155 §8.3 over one chain.
ClosestEncloser closest_encloser_in(Hasher& hash, const Chain& c, const wire::Name& qname,
                                    const wire::Name& zone) {
  ClosestEncloser out;
  if (!qname.is_subdomain_of(zone)) return out;
  std::optional<Nsec3Hash> below;  // the hash of the name one label below `sname`
  wire::Name sname = qname;
  for (;;) {
    const auto h = hash(sname);
    if (!h) {
      out.verdict = hash.failed();
      return out;
    }
    if (const UsableNsec3* m = nsec3_matching(c, *h)) {
      // `qname` exists; or the closest encloser is a zone cut or DNAME (RFC 6840 §4.1).
      if (!below || cuts_below(m->rr.types)) return out;
      const UsableNsec3* cover = nsec3_covering(c, *below);
      if (cover == nullptr) return out;
      out.closest = sname;
      out.next_closer = qname.parent(qname.label_count() - sname.label_count() - 1);
      out.verdict = cover->rr.opt_out() ? DenialVerdict::ProvenInsecure : DenialVerdict::Proven;
      return out;
    }
    if (sname == zone) return out;  // not even the apex matched
    below = h;
    sname = sname.parent(1);
  }
}

// A proof tried on every chain: the best verdict wins. A chain over the iteration limit is
// not hashed at all; the budget running out ends the search.
template <typename Prove>
DenialVerdict over_chains(std::span<const Nsec3Record> nsec3s, const wire::Name& zone,
                          HashBudget& budget, uint16_t max_iterations, Prove prove) {
  auto chains = chains_of(nsec3s, zone);
  bool insecure = false;
  bool too_many_iterations = false;
  for (auto& c : chains) {
    if (c.iterations > max_iterations) {
      too_many_iterations = true;
      continue;
    }
    Hasher hash(c, budget);
    switch (prove(hash, c)) {
      case DenialVerdict::Proven:
        return DenialVerdict::Proven;
      case DenialVerdict::ProvenInsecure:
        insecure = true;
        break;
      case DenialVerdict::BudgetExhausted:
        return insecure ? DenialVerdict::ProvenInsecure : DenialVerdict::BudgetExhausted;
      case DenialVerdict::NotProven:
      case DenialVerdict::IterationsTooHigh:
        break;
    }
  }
  if (insecure) return DenialVerdict::ProvenInsecure;
  if (too_many_iterations) return DenialVerdict::IterationsTooHigh;
  return DenialVerdict::NotProven;
}

}  // namespace

std::optional<wire::Name> wildcard_at(const wire::Name& name) noexcept {
  const auto tail = name.wire();
  if (tail.size() + 2 > wire::kMaxNameOctets) return std::nullopt;
  std::array<uint8_t, wire::kMaxNameOctets> buf{1, '*'};
  std::copy(tail.begin(), tail.end(), buf.begin() + 2);
  auto w = wire::Name::from_wire(std::span<const uint8_t>(buf.data(), tail.size() + 2));
  if (!w) return std::nullopt;
  return *w;
}

// --- Type bitmaps ---

std::optional<TypeBitmap> TypeBitmap::parse(std::span<const uint8_t> bytes) noexcept {
  int previous = -1;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 2) return std::nullopt;
    const int window = bytes[at];
    const std::size_t len = bytes[at + 1];
    if (window <= previous || len == 0 || len > kMaxWindowBitmap || bytes.size() - at - 2 < len)
      return std::nullopt;
    if (bytes[at + 2 + len - 1] == 0) return std::nullopt;  // a trailing zero octet
    previous = window;
    at += 2 + len;
  }
  return TypeBitmap(bytes);
}

bool TypeBitmap::has(uint16_t type) const noexcept {
  const std::size_t window = type >> 8;
  const std::size_t octet = (type & 0xff) / 8;
  const auto mask = static_cast<uint8_t>(0x80 >> (type & 7));
  std::size_t at = 0;
  while (at + 2 <= bytes_.size()) {
    const std::size_t len = bytes_[at + 1];
    if (bytes_[at] == window) return octet < len && (bytes_[at + 2 + octet] & mask) != 0;
    if (bytes_[at] > window) return false;
    at += 2 + len;
  }
  return false;
}

std::vector<uint16_t> TypeBitmap::types() const {
  std::vector<uint16_t> out;
  std::size_t at = 0;
  while (at + 2 <= bytes_.size()) {
    const std::size_t window = bytes_[at];
    const std::size_t len = bytes_[at + 1];
    for (std::size_t i = 0; i < len; ++i)
      for (std::size_t bit = 0; bit < 8; ++bit)
        if ((bytes_[at + 2 + i] & (0x80 >> bit)) != 0)
          out.push_back(static_cast<uint16_t>((window << 8) | (i * 8 + bit)));
    at += 2 + len;
  }
  return out;
}

std::vector<uint8_t> encode_type_bitmap(std::span<const uint16_t> types) {
  std::vector<uint16_t> sorted(types.begin(), types.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint8_t> out;
  std::size_t i = 0;
  while (i < sorted.size()) {
    const int window = sorted[i] >> 8;
    std::array<uint8_t, kMaxWindowBitmap> bits{};
    std::size_t len = 0;
    for (; i < sorted.size() && (sorted[i] >> 8) == window; ++i) {
      const std::size_t low = sorted[i] & 0xff;
      bits[low / 8] = static_cast<uint8_t>(bits[low / 8] | (0x80 >> (low & 7)));
      len = low / 8 + 1;
    }
    out.push_back(static_cast<uint8_t>(window));
    out.push_back(static_cast<uint8_t>(len));
    out.insert(out.end(), bits.begin(), bits.begin() + static_cast<std::ptrdiff_t>(len));
  }
  return out;
}

// --- RDATA ---

std::optional<Nsec> parse_nsec(std::span<const uint8_t> rdata) {
  std::size_t at = 0;
  auto next = read_uncompressed_name(rdata, at);
  if (!next) return std::nullopt;
  auto types = TypeBitmap::parse(rdata.subspan(at));
  if (!types) return std::nullopt;
  return Nsec{*next, *types};
}

std::optional<Nsec3> parse_nsec3(std::span<const uint8_t> rdata) {
  // Hash algorithm, flags, iterations (2), salt length, salt, hash length, next hashed owner
  // name, type bitmap (RFC 5155 §3.2).
  if (rdata.size() < 5) return std::nullopt;
  Nsec3 n;
  n.hash_algorithm = rdata[0];
  n.flags = rdata[1];
  n.iterations = base::load_u16(rdata.data() + 2);
  std::size_t at = 4;
  const std::size_t salt_len = rdata[at++];
  if (rdata.size() - at < salt_len + 1) return std::nullopt;
  n.salt = rdata.subspan(at, salt_len);
  at += salt_len;
  const std::size_t hash_len = rdata[at++];
  if (hash_len == 0 || rdata.size() - at < hash_len) return std::nullopt;
  n.next_hashed = rdata.subspan(at, hash_len);
  at += hash_len;
  auto types = TypeBitmap::parse(rdata.subspan(at));
  if (!types) return std::nullopt;
  n.types = *types;
  return n;
}

std::optional<Nsec3Param> parse_nsec3param(std::span<const uint8_t> rdata) {
  // Hash algorithm, flags, iterations (2), salt length, salt (RFC 5155 §4.2).
  if (rdata.size() < 5) return std::nullopt;
  Nsec3Param p;
  p.hash_algorithm = rdata[0];
  p.flags = rdata[1];
  p.iterations = base::load_u16(rdata.data() + 2);
  const std::size_t salt_len = rdata[4];
  if (rdata.size() != 5 + salt_len) return std::nullopt;
  p.salt = rdata.subspan(5, salt_len);
  return p;
}

// --- base32hex ---

std::string base32hex_encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() * 8 + 4) / 5);
  uint32_t acc = 0;
  int bits = 0;
  for (const uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out.push_back(kBase32Hex[(acc >> bits) & 31]);
    }
  }
  if (bits > 0) out.push_back(kBase32Hex[(acc << (5 - bits)) & 31]);
  return out;
}

std::optional<std::vector<uint8_t>> base32hex_decode(std::string_view text) {
  // RFC 4648 §6: 1, 3 or 6 characters left after whole groups of 8 encode no whole octet.
  const std::size_t tail = text.size() % 8;
  if (tail == 1 || tail == 3 || tail == 6) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(text.size() * 5 / 8);
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    const int v = base32hex_value(c);
    if (v < 0) return std::nullopt;
    acc = ((acc << 5) | static_cast<uint32_t>(v)) & 0xfff;  // at most 12 bits are pending
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  // The bits left over must be zero, so each octet string has one encoding (RFC 4648 §3.5).
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

// --- NSEC3 hashing ---

std::optional<Nsec3Hash> nsec3_hash(const wire::Name& name, std::span<const uint8_t> salt,
                                    uint16_t iterations) {
  // RFC 5155 §5: IH(salt, x, 0) = H(x || salt), IH(salt, x, k) = H(IH(salt, x, k-1) || salt),
  // x the owner name in canonical form (RFC 4034 §6.2: lowercased, uncompressed).
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx) return std::nullopt;
  const EVP_MD* sha1 = EVP_sha1();
  Nsec3Hash h{};
  auto digest = [&](std::span<const uint8_t> x) {
    unsigned int len = 0;
    Nsec3Hash out{};
    const bool ok = EVP_DigestInit_ex(ctx.get(), sha1, nullptr) == 1 &&
                    EVP_DigestUpdate(ctx.get(), x.data(), x.size()) == 1 &&
                    EVP_DigestUpdate(ctx.get(), salt.data(), salt.size()) == 1 &&
                    EVP_DigestFinal_ex(ctx.get(), out.data(), &len) == 1 && len == kNsec3HashSize;
    if (ok) h = out;
    return ok;
  };
  const wire::Name canonical = name.lowercased();
  if (!digest(canonical.wire())) return std::nullopt;
  for (uint16_t i = 0; i < iterations; ++i) {
    const Nsec3Hash previous = h;
    if (!digest(previous)) return std::nullopt;
  }
  return h;
}

// --- NSEC ---

bool nsec_covers(const wire::Name& owner, const wire::Name& next, const wire::Name& name) noexcept {
  if (owner < next) return owner < name && name < next;
  // The last NSEC of the zone (next is the apex), or the only one (next is the owner).
  return owner < name || name < next;
}

bool nsec_matches(const wire::Name& owner, const wire::Name& name) noexcept {
  return owner == name;
}

wire::Name nsec_closest_encloser(const wire::Name& owner, const wire::Name& next,
                                 const wire::Name& name) noexcept {
  const int n = std::max(common_labels(owner, name), common_labels(next, name));
  return name.parent(name.label_count() - n);
}

DenialVerdict nsec_prove_nxdomain(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                  const wire::Name& zone) {
  if (!qname.is_subdomain_of(zone) || qname == zone) return DenialVerdict::NotProven;
  const auto usable = usable_nsecs(nsecs, zone);
  const UsableNsec* cover = nsec_denying(usable, qname);
  if (cover == nullptr) return DenialVerdict::NotProven;
  // The next name below `qname` makes it an empty non-terminal: it exists (a NODATA; RFC 4035
  // §3.1.3.2 note). The RCODE is not signed, so this must not pass for an NXDOMAIN.
  if (cover->rr.next.is_subdomain_of(qname)) return DenialVerdict::NotProven;
  const wire::Name ce = nsec_closest_encloser(*cover->owner, cover->rr.next, qname);
  if (!ce.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  // No wildcard at the closest encloser could have answered (RFC 4035 §5.4): it is covered,
  // which means it does not exist (an NSEC at it would be a wildcard NODATA or answer).
  const auto wildcard = wildcard_at(ce);
  if (wildcard && nsec_denying(usable, *wildcard) == nullptr) return DenialVerdict::NotProven;
  return DenialVerdict::Proven;
}

DenialVerdict nsec_prove_nodata(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                uint16_t qtype, const wire::Name& zone) {
  if (!qname.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  const auto usable = usable_nsecs(nsecs, zone);
  if (const UsableNsec* m = nsec_at(usable, qname))
    return denies_type(m->rr.types, qname, qtype) ? DenialVerdict::Proven
                                                  : DenialVerdict::NotProven;
  const UsableNsec* cover = nsec_denying(usable, qname);
  if (cover == nullptr) return DenialVerdict::NotProven;
  // An empty non-terminal (RFC 4035 §3.1.3.2 note, RFC 4592 §2.2.2): no NSEC of its own, but
  // the name after it in the chain is below it, so it exists, with no types at all.
  if (cover->rr.next.is_subdomain_of(qname)) return DenialVerdict::Proven;
  // A wildcard NODATA (RFC 4035 §3.1.3.4): `qname` does not exist, and the wildcard at its
  // closest encloser does, without the type.
  const wire::Name ce = nsec_closest_encloser(*cover->owner, cover->rr.next, qname);
  if (!ce.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  const auto wildcard = wildcard_at(ce);
  if (!wildcard) return DenialVerdict::NotProven;
  const UsableNsec* w = nsec_at(usable, *wildcard);
  return w != nullptr && denies_type(w->rr.types, *wildcard, qtype) ? DenialVerdict::Proven
                                                                    : DenialVerdict::NotProven;
}

DenialVerdict nsec_prove_wildcard_answer(std::span<const NsecRecord> nsecs, const wire::Name& qname,
                                         int rrsig_labels, const wire::Name& zone) {
  const int labels = qname.label_count();
  if (rrsig_labels < 0 || rrsig_labels >= labels) return DenialVerdict::NotProven;
  const wire::Name ce = qname.parent(labels - rrsig_labels);
  if (!ce.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  const wire::Name next_closer = qname.parent(labels - rrsig_labels - 1);
  const auto usable = usable_nsecs(nsecs, zone);
  return nsec_denying(usable, next_closer) != nullptr ? DenialVerdict::Proven
                                                      : DenialVerdict::NotProven;
}

DenialVerdict nsec_prove_insecure_delegation(std::span<const NsecRecord> nsecs,
                                             const wire::Name& delegation, const wire::Name& zone) {
  if (!delegation.is_subdomain_of(zone) || delegation == zone) return DenialVerdict::NotProven;
  const auto usable = usable_nsecs(nsecs, zone);
  const UsableNsec* m = nsec_at(usable, delegation);
  if (m == nullptr) return DenialVerdict::NotProven;
  const TypeBitmap& t = m->rr.types;
  return t.has(kTypeNs) && !t.has(kTypeDs) && !t.has(kTypeSoa) ? DenialVerdict::Proven
                                                               : DenialVerdict::NotProven;
}

// --- NSEC3 ---

bool nsec3_covers(std::span<const uint8_t> owner, std::span<const uint8_t> next,
                  std::span<const uint8_t> hash) noexcept {
  // Hashes compare as unsigned octet strings (RFC 5155 §3.1.7: in hash order).
  auto less = [](std::span<const uint8_t> a, std::span<const uint8_t> b) {
    const std::size_t n = std::min(a.size(), b.size());
    const int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
    return c != 0 ? c < 0 : a.size() < b.size();
  };
  if (less(owner, next)) return less(owner, hash) && less(hash, next);
  // The last record of the chain (next is the first owner), or the only one.
  return less(owner, hash) || less(hash, next);
}

std::optional<Nsec3Hash> nsec3_owner_hash(const wire::Name& owner, const wire::Name& zone) {
  if (owner.label_count() != zone.label_count() + 1 || !(owner.parent(1) == zone))
    return std::nullopt;
  const auto w = owner.wire();
  if (w[0] != kNsec3LabelSize) return std::nullopt;
  const std::string_view label(reinterpret_cast<const char*>(w.data() + 1), kNsec3LabelSize);
  const auto bytes = base32hex_decode(label);
  if (!bytes || bytes->size() != kNsec3HashSize) return std::nullopt;
  Nsec3Hash h;
  std::copy(bytes->begin(), bytes->end(), h.begin());
  return h;
}

ClosestEncloser nsec3_closest_encloser(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                       const wire::Name& zone, HashBudget& budget,
                                       uint16_t max_iterations) {
  ClosestEncloser best;
  if (!qname.is_subdomain_of(zone)) return best;
  best.verdict = over_chains(nsec3s, zone, budget, max_iterations, [&](Hasher& hash, Chain& c) {
    ClosestEncloser ce = closest_encloser_in(hash, c, qname, zone);
    if (ce.verdict == DenialVerdict::Proven ||
        (ce.verdict == DenialVerdict::ProvenInsecure && best.verdict != DenialVerdict::Proven))
      best = ce;
    return ce.verdict;
  });
  if (best.verdict != DenialVerdict::Proven && best.verdict != DenialVerdict::ProvenInsecure) {
    best.closest = wire::Name();
    best.next_closer = wire::Name();
  }
  return best;
}

DenialVerdict nsec3_prove_nxdomain(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                   const wire::Name& zone, HashBudget& budget,
                                   uint16_t max_iterations) {
  if (!qname.is_subdomain_of(zone) || qname == zone) return DenialVerdict::NotProven;
  return over_chains(nsec3s, zone, budget, max_iterations, [&](Hasher& hash, Chain& c) {
    // The closest encloser proof's verdict carries its Opt-Out (RFC 5155 §9.2) to the whole.
    const ClosestEncloser ce = closest_encloser_in(hash, c, qname, zone);
    if (ce.verdict != DenialVerdict::Proven && ce.verdict != DenialVerdict::ProvenInsecure)
      return ce.verdict;
    // RFC 5155 §8.4: and no wildcard at the closest encloser.
    const auto wildcard = wildcard_at(ce.closest);
    if (!wildcard) return ce.verdict;
    const auto h = hash(*wildcard);
    if (!h) return hash.failed();
    return nsec3_covering(c, *h) != nullptr ? ce.verdict : DenialVerdict::NotProven;
  });
}

DenialVerdict nsec3_prove_nodata(std::span<const Nsec3Record> nsec3s, const wire::Name& qname,
                                 uint16_t qtype, const wire::Name& zone, HashBudget& budget,
                                 uint16_t max_iterations) {
  if (!qname.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  return over_chains(nsec3s, zone, budget, max_iterations, [&](Hasher& hash, Chain& c) {
    const auto h = hash(qname);
    if (!h) return hash.failed();
    // RFC 5155 §8.5, §8.6: the NSEC3 of `qname` itself.
    if (const UsableNsec3* m = nsec3_matching(c, *h))
      return denies_type(m->rr.types, qname, qtype) ? DenialVerdict::Proven
                                                    : DenialVerdict::NotProven;
    const ClosestEncloser ce = closest_encloser_in(hash, c, qname, zone);
    if (ce.verdict != DenialVerdict::Proven && ce.verdict != DenialVerdict::ProvenInsecure)
      return ce.verdict;
    // RFC 5155 §8.6: a DS with no NSEC3 of its own is denied only by Opt-Out, and then
    // insecurely: the delegation may exist, unsigned.
    if (qtype == kTypeDs)
      return ce.verdict == DenialVerdict::ProvenInsecure ? DenialVerdict::ProvenInsecure
                                                         : DenialVerdict::NotProven;
    // RFC 5155 §8.7: the wildcard at the closest encloser exists, without the type.
    const auto wildcard = wildcard_at(ce.closest);
    if (!wildcard) return DenialVerdict::NotProven;
    const auto wh = hash(*wildcard);
    if (!wh) return hash.failed();
    const UsableNsec3* w = nsec3_matching(c, *wh);
    return w != nullptr && denies_type(w->rr.types, *wildcard, qtype) ? ce.verdict
                                                                      : DenialVerdict::NotProven;
  });
}

DenialVerdict nsec3_prove_wildcard_answer(std::span<const Nsec3Record> nsec3s,
                                          const wire::Name& qname, int rrsig_labels,
                                          const wire::Name& zone, HashBudget& budget,
                                          uint16_t max_iterations) {
  const int labels = qname.label_count();
  if (rrsig_labels < 0 || rrsig_labels >= labels) return DenialVerdict::NotProven;
  const wire::Name ce = qname.parent(labels - rrsig_labels);
  if (!ce.is_subdomain_of(zone)) return DenialVerdict::NotProven;
  const wire::Name next_closer = qname.parent(labels - rrsig_labels - 1);
  return over_chains(nsec3s, zone, budget, max_iterations, [&](Hasher& hash, Chain& c) {
    const auto h = hash(next_closer);
    if (!h) return hash.failed();
    const UsableNsec3* cover = nsec3_covering(c, *h);
    if (cover == nullptr) return DenialVerdict::NotProven;
    // RFC 5155 §9.2: with Opt-Out, an unsigned delegation could be the closer match.
    return cover->rr.opt_out() ? DenialVerdict::ProvenInsecure : DenialVerdict::Proven;
  });
}

DenialVerdict nsec3_prove_insecure_delegation(std::span<const Nsec3Record> nsec3s,
                                              const wire::Name& delegation, const wire::Name& zone,
                                              HashBudget& budget, uint16_t max_iterations) {
  if (!delegation.is_subdomain_of(zone) || delegation == zone) return DenialVerdict::NotProven;
  return over_chains(nsec3s, zone, budget, max_iterations, [&](Hasher& hash, Chain& c) {
    const auto h = hash(delegation);
    if (!h) return hash.failed();
    if (const UsableNsec3* m = nsec3_matching(c, *h)) {
      const TypeBitmap& t = m->rr.types;
      return t.has(kTypeNs) && !t.has(kTypeDs) && !t.has(kTypeSoa) ? DenialVerdict::Proven
                                                                   : DenialVerdict::NotProven;
    }
    const ClosestEncloser ce = closest_encloser_in(hash, c, delegation, zone);
    if (ce.verdict == DenialVerdict::BudgetExhausted) return ce.verdict;
    return ce.verdict == DenialVerdict::ProvenInsecure ? DenialVerdict::ProvenInsecure
                                                       : DenialVerdict::NotProven;
  });
}

}  // namespace hg::dnssec
