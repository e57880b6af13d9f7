#include "dnssec/trust_anchor.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/bytes.h"
#include "base/decimal.h"
#include "base/small_file.h"
#include "dnssec/crypto.h"

namespace hg::dnssec {

namespace {

constexpr uint8_t kDnskeyProtocol = 3;          // RFC 4034 §2.1.2
constexpr std::size_t kMaxRdataOctets = 65535;  // RDLENGTH is 16 bits
constexpr uint32_t kMaxTtl = 2147483647;        // RFC 2181 §8
constexpr std::size_t kDsFixed = 4;             // octets of key tag, algorithm and digest type
constexpr std::size_t kDnskeyFixed = 4;         // octets of flags, protocol and algorithm
constexpr std::size_t kRdataWords = 4;          // the fixed fields and at least one word of data
constexpr std::size_t kShownWordChars = 40;     // of a word quoted in an error message

// RFC 4034 Appendix A.1's mnemonics, as zone files may give algorithms (and BIND writes them
// in comments); the numbers are what the records hold.
struct Mnemonic {
  std::string_view name;
  uint8_t number;
};
constexpr std::array<Mnemonic, 13> kAlgorithms = {{
    {"RSAMD5", 1},
    {"DH", 2},
    {"DSA", 3},
    {"RSASHA1", 5},
    {"DSA-NSEC3-SHA1", 6},
    {"RSASHA1-NSEC3-SHA1", 7},
    {"RSASHA256", 8},
    {"RSASHA512", 10},
    {"ECC-GOST", 12},
    {"ECDSAP256SHA256", 13},
    {"ECDSAP384SHA384", 14},
    {"ED25519", 15},
    {"ED448", 16},
}};

// The digest length of each DS digest type with a fixed one (IANA registry): SHA-1 (RFC
// 4034), SHA-256 (RFC 4509), GOST R 34.11-94 (RFC 5933), SHA-384 (RFC 6605). 0: not known.
std::size_t digest_octets(uint8_t digest_type) noexcept {
  switch (digest_type) {
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

std::string_view digest_name(uint8_t digest_type) noexcept {
  switch (digest_type) {
    case 1:
      return "SHA-1";
    case 2:
      return "SHA-256";
    case 3:
      return "GOST R 34.11-94";
    case 4:
      return "SHA-384";
    default:
      return "unknown";
  }
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return wire::ascii_lower(static_cast<uint8_t>(x)) ==
                  wire::ascii_lower(static_cast<uint8_t>(y));
         });
}

bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// A word as an error message shows it: quoted, and cut short (a base64 key is long).
std::string quote(std::string_view w) {
  if (w.size() <= kShownWordChars) return "'" + std::string(w) + "'";
  return "'" + std::string(w.substr(0, kShownWordChars)) + "...'";
}

// RFC 4034 §6.3's order of RDATAs: as octet strings, a shorter one before a longer it begins.
// (Compared by hand: g++ 14 at -O3 warns falsely on std::vector's operator<=>, see
// signed_data.cc.)
bool octets_before(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) noexcept {
  const std::size_t n = std::min(x.size(), y.size());
  const int c = n == 0 ? 0 : std::memcmp(x.data(), y.data(), n);
  return c != 0 ? c < 0 : x.size() < y.size();
}

void sort_unique(std::vector<std::vector<uint8_t>>& v) {
  std::sort(v.begin(), v.end(), octets_before);
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// One record as the tokenizer gives it: its words (parentheses and comments gone) and the
// line it begins on.
struct Record {
  std::vector<std::string> words;
  std::size_t line = 0;
};

// Splits the text into records (a record is one line, or several when parentheses group
// them: RFC 1035 §5.1) and hands each to `on_record` as soon as it ends, so that the first
// line in error is the one reported. `on_record` returns an error message, or empty. Returns
// an error message ("LINE: what"), or empty.
template <class OnRecord>
std::string split_records(std::string_view text, const OnRecord& on_record) {
  Record rec;
  std::size_t records = 0;
  std::string word;
  bool open = false;  // inside parentheses
  std::size_t open_line = 0;
  bool indented = false;  // the record's first line begins with a blank
  std::size_t line_no = 0;
  const auto end_word = [&]() -> std::string {
    if (word.empty()) return {};
    // A line that begins with a blank continues the previous owner in a zone file; here
    // every record must name its zone, so an owner is never inherited.
    if (rec.words.empty() && indented)
      return std::to_string(rec.line) +
             ": the record begins with a blank, so it has no owner name: start it with the "
             "zone's name (e.g. '. IN DS ...'), as every record here must";
    rec.words.push_back(std::move(word));
    word.clear();
    return {};
  };
  const auto end_record = [&]() -> std::string {
    if (rec.words.empty()) return {};
    // Counted as they come: a file of a million one-word lines stops at the 1001st.
    if (records == kMaxTrustAnchors)
      return std::to_string(rec.line) + ": more than " + std::to_string(kMaxTrustAnchors) +
             " trust anchors: a file holds a few keys a zone; is this the right file?";
    ++records;
    if (auto e = on_record(rec); !e.empty()) return std::to_string(rec.line) + ": " + e;
    rec.words.clear();
    return {};
  };
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    if (line.size() > kMaxTrustAnchorLineBytes)
      return std::to_string(line_no) + ": the line is longer than " +
             std::to_string(kMaxTrustAnchorLineBytes) +
             " bytes: a trust anchor file is a few short lines; is this the right file?";
    if (line.ends_with('\r')) line.remove_suffix(1);  // CRLF line ends
    if (!open) {
      if (auto e = end_record(); !e.empty()) return e;
      rec = Record{};
      rec.line = line_no;
      indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    }
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == ';') break;  // a comment, to the end of the line
      if (c == ' ' || c == '\t' || c == '(' || c == ')') {
        if (auto e = end_word(); !e.empty()) return e;
        if (c == '(') {
          if (open)
            return std::to_string(line_no) + ": '(' inside the parentheses opened on line " +
                   std::to_string(open_line) + ": parentheses do not nest";
          open = true;
          open_line = line_no;
        } else if (c == ')') {
          if (!open) return std::to_string(line_no) + ": ')' without an '(' before it: remove it";
          open = false;
        }
        continue;
      }
      const auto byte = static_cast<uint8_t>(c);
      if (byte < 0x20 || byte >= 0x7f)
        return std::to_string(line_no) + ": byte " + std::to_string(byte) +
               " is not printable ASCII: outside comments a trust anchor file is ASCII text "
               "(write any other byte of a name as \\DDD)";
      if (c == '"')
        return std::to_string(line_no) +
               ": a quoted string: DS and DNSKEY records hold none; remove the quotes";
      word.push_back(c);
      if (c == '\\' && i + 1 < line.size()) {
        // An escape: the next character is part of the word, whatever it is (a name may
        // hold "\ " or "\;"); Name::from_text() checks it.
        const auto next = static_cast<uint8_t>(line[i + 1]);
        if (next < 0x20 || next >= 0x7f)
          return std::to_string(line_no) + ": byte " + std::to_string(next) +
                 " is not printable ASCII: write it as \\DDD";
        word.push_back(line[++i]);
      }
    }
    if (auto e = end_word(); !e.empty()) return e;
  }
  if (open)
    return std::to_string(open_line) + ": '(' is never closed: add the ')' that ends the record";
  return end_record();
}

// Whether a name's text ends with a dot that is not escaped ("a\." is relative).
bool absolute(std::string_view w) noexcept {
  if (w.empty() || w.back() != '.') return false;
  std::size_t slashes = 0;
  for (std::size_t i = w.size() - 1; i > 0 && w[i - 1] == '\\'; --i)
    ++slashes;
  return slashes % 2 == 0;
}

std::string_view name_problem(wire::ParseError e) noexcept {
  switch (e) {
    case wire::ParseError::EmptyLabel:
      return "an empty label: a leading dot or two dots in a row";
    case wire::ParseError::LabelTooLong:
      return "a label longer than 63 octets";
    case wire::ParseError::NameTooLong:
      return "longer than 255 octets";
    case wire::ParseError::BadEscape:
      return "a bad escape: \\ must be followed by a character or three digits up to 255";
    default:
      return wire::to_string(e);
  }
}

std::optional<uint8_t> parse_algorithm(std::string_view w) noexcept {
  if (auto n = base::parse_decimal<uint8_t>(w)) return n;
  for (const Mnemonic& m : kAlgorithms)
    if (iequals(w, m.name)) return m.number;
  return std::nullopt;
}

// Hex digits (any case) to octets; an error message, or empty. OPENSSL_hexchar2int reads
// each digit: OPENSSL_hexstr2buf_ex would take the whole string, but on bad input it leaves
// errors on the thread's OpenSSL error queue, where the TLS code on the same thread would
// later find them.
std::string decode_hex(std::string_view hex, std::vector<uint8_t>& out) {
  for (const char c : hex)
    if (OPENSSL_hexchar2int(static_cast<unsigned char>(c)) < 0)
      return quote(std::string(1, c)) + " is not a hex digit";
  if (hex.size() % 2 != 0)
    return "an odd number (" + std::to_string(hex.size()) +
           ") of hex digits: one is missing or extra";
  out.reserve(out.size() + hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out.push_back(
        static_cast<uint8_t>((OPENSSL_hexchar2int(static_cast<unsigned char>(hex[i])) << 4) |
                             OPENSSL_hexchar2int(static_cast<unsigned char>(hex[i + 1]))));
  return {};
}

bool base64_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '+' || c == '/';
}

// Base64 (RFC 4648 §4, with its padding) to octets; an error message, or empty.
//
// EVP_DecodeBlock does the decoding, but is lenient where a key must not be: it skips
// blanks at either end, takes '=' anywhere in a group ("A===" and "AA=A" decode), and
// returns 3 octets per 4 characters, the padding's zero octets included. So the text is
// checked here first (alphabet, length a multiple of 4, at most two '=' and only at the
// end) and the padding's octets are cut off after.
std::string decode_base64(std::string_view b64, std::vector<uint8_t>& out) {
  std::size_t pad = 0;
  while (pad < b64.size() && b64[b64.size() - 1 - pad] == '=')
    ++pad;
  const std::string_view body = b64.substr(0, b64.size() - pad);
  for (const char c : body) {
    if (c == '=') return "'=' inside the base64: padding may only end it";
    if (!base64_char(c)) return quote(std::string(1, c)) + " is not a base64 character";
  }
  if (pad > 2) return "more than two '=' end the base64";
  if (b64.size() % 4 != 0)
    return "the base64 is " + std::to_string(b64.size()) +
           " characters long, not a multiple of 4: part of it is missing (a record that "
           "goes on over several lines needs parentheses around them)";
  const std::size_t start = out.size();
  out.resize(start + b64.size() / 4 * 3);
  const int n =
      EVP_DecodeBlock(out.data() + start, reinterpret_cast<const unsigned char*>(b64.data()),
                      static_cast<int>(b64.size()));
  if (n < 0 || static_cast<std::size_t>(n) != b64.size() / 4 * 3)
    return "the base64 does not decode";
  out.resize(out.size() - pad);
  return {};
}

std::string join(std::span<const std::string> words) {
  std::string s;
  for (const std::string& w : words)
    s += w;
  return s;
}

}  // namespace

// Gathers anchors zone by zone; TrustAnchors' friend, so that only parsing makes them.
class TrustAnchorsBuilder {
 public:
  void add_ds(const wire::Name& zone, std::vector<uint8_t> rdata) {
    at(zone).ds.push_back(std::move(rdata));
  }
  void add_dnskey(const wire::Name& zone, std::vector<uint8_t> rdata) {
    at(zone).dnskey.push_back(std::move(rdata));
  }
  bool empty() const noexcept { return zones_.empty(); }
  TrustAnchors finish() && {
    TrustAnchors t;
    t.zones_.reserve(zones_.size());
    for (auto& [name, z] : zones_) {  // a map of Names: in canonical order
      sort_unique(z.ds);
      sort_unique(z.dnskey);
      t.zones_.push_back(std::move(z));
    }
    return t;
  }

 private:
  ZoneAnchors& at(const wire::Name& zone) {
    const wire::Name lower = zone.lowercased();
    auto [it, fresh] = zones_.try_emplace(lower);
    if (fresh) it->second.zone = lower;
    return it->second;
  }
  std::map<wire::Name, ZoneAnchors> zones_;
};

namespace {

// DS RDATA: KEYTAG ALGORITHM DIGESTTYPE DIGEST (RFC 4034 §5.3). An error message, or empty.
std::string parse_ds(std::span<const std::string> w, std::vector<uint8_t>& rdata) {
  if (w.size() < kRdataWords)
    return "the DS record ends before its digest: a DS is '. IN DS KEYTAG ALGORITHM "
           "DIGESTTYPE DIGEST' (e.g. '. IN DS 20326 8 2 E06D44B8...')";
  const auto tag = base::parse_decimal<uint16_t>(w[0]);
  if (!tag) return "DS key tag " + quote(w[0]) + " is not a number from 0 to 65535";
  const auto alg = parse_algorithm(w[1]);
  if (!alg)
    return "DS algorithm " + quote(w[1]) +
           " is neither a number up to 255 nor a mnemonic such as RSASHA256 (RFC 4034 A.1)";
  if (*alg == 0) return "DS algorithm 0 is reserved (RFC 4034 A.1): not a key's algorithm";
  const auto type = base::parse_decimal<uint8_t>(w[2]);
  if (!type) return "DS digest type " + quote(w[2]) + " is not a number up to 255";
  if (*type == 0) return "DS digest type 0 is reserved: the zone's DS uses 2 (SHA-256)";
  base::append_u16(rdata, *tag);
  rdata.push_back(*alg);
  rdata.push_back(*type);
  if (auto e = decode_hex(join(w.subspan(3)), rdata); !e.empty()) return "DS digest: " + e;
  const std::size_t got = rdata.size() - kDsFixed;
  if (const std::size_t want = digest_octets(*type); want != 0 && got != want)
    return "DS digest of " + std::to_string(got) + " octets (" + std::to_string(2 * got) +
           " hex digits), but digest type " + std::to_string(*type) + " (" +
           std::string(digest_name(*type)) + ") has " + std::to_string(want) + " (" +
           std::to_string(2 * want) +
           "): a digit is missing or extra, or the digest type is not the digest's";
  return {};
}

// DNSKEY RDATA: FLAGS PROTOCOL ALGORITHM PUBLICKEY (RFC 4034 §2.2). An error message, or empty.
std::string parse_dnskey(std::span<const std::string> w, std::vector<uint8_t>& rdata) {
  if (w.size() < kRdataWords)
    return "the DNSKEY record ends before its public key: a DNSKEY is '. IN DNSKEY FLAGS "
           "PROTOCOL ALGORITHM PUBLICKEY' (e.g. '. IN DNSKEY 257 3 8 AwEAAaz/...')";
  const auto flags = base::parse_decimal<uint16_t>(w[0]);
  if (!flags) return "DNSKEY flags " + quote(w[0]) + " is not a number from 0 to 65535";
  if ((*flags & kDnskeyZoneFlag) == 0)
    return "DNSKEY flags " + std::to_string(*flags) +
           " lack the Zone Key flag (256): such a key must not verify a zone's signatures "
           "(RFC 4034 §2.1.1); a zone's key-signing key has flags 257";
  if ((*flags & kDnskeyRevokeFlag) != 0)
    return "DNSKEY flags " + std::to_string(*flags) +
           " have the REVOKE flag (128): the zone has withdrawn this key (RFC 5011 §2.1); "
           "remove it and anchor the zone's current key";
  const auto protocol = base::parse_decimal<uint8_t>(w[1]);
  if (!protocol || *protocol != kDnskeyProtocol)
    return "DNSKEY protocol " + quote(w[1]) + " is not 3, the only one (RFC 4034 §2.1.2)";
  const auto alg = parse_algorithm(w[2]);
  if (!alg)
    return "DNSKEY algorithm " + quote(w[2]) +
           " is neither a number up to 255 nor a mnemonic such as RSASHA256 (RFC 4034 A.1)";
  if (*alg == 0) return "DNSKEY algorithm 0 is reserved (RFC 4034 A.1): not a key's algorithm";
  base::append_u16(rdata, *flags);
  rdata.push_back(kDnskeyProtocol);
  rdata.push_back(*alg);
  if (auto e = decode_base64(join(w.subspan(3)), rdata); !e.empty())
    return "DNSKEY public key: " + e;
  return {};
}

// One record into `b`; an error message (without the file and line), or empty.
std::string parse_record(const Record& r, TrustAnchorsBuilder& b) {
  const std::vector<std::string>& w = r.words;
  const std::string& owner = w[0];
  if (owner.starts_with('$'))
    return "the directive " + quote(owner) +
           " is not supported here: remove it (a trust anchor file holds records only, each "
           "naming its zone in full)";
  if (owner == "@")
    return "'@' means the $ORIGIN, which a trust anchor file does not have: write the "
           "zone's name with its trailing dot ('.' for the root, 'example.com.')";
  if (!absolute(owner))
    return "the owner name " + quote(owner) +
           " is relative: write it with its trailing dot (a trust anchor file has no $ORIGIN)";
  const auto zone = wire::Name::from_text(owner);
  if (!zone)
    return "the owner name " + quote(owner) +
           " is not a valid domain name: " + std::string(name_problem(zone.error().code));

  // TTL and class, each optional, in either order (RFC 1035 §5.1).
  std::size_t i = 1;
  bool ttl = false;
  bool klass = false;
  for (; i < w.size(); ++i) {  // each at most once, so this ends after two words
    if (is_digit(w[i][0])) {
      const auto v = base::parse_decimal<uint32_t>(w[i]);
      if (!v || *v > kMaxTtl)
        return "TTL " + quote(w[i]) +
               " is not a number of seconds from 0 to 2147483647 (RFC 2181 §8)";
      if (ttl) return "a second TTL " + quote(w[i]) + ": a record has one";
      ttl = true;
    } else if (iequals(w[i], "IN") || iequals(w[i], "CLASS1")) {
      if (klass) return "the class IN is given twice";
      klass = true;
    } else if (iequals(w[i], "CH") || iequals(w[i], "HS") || iequals(w[i], "CS") ||
               iequals(w[i], "ANY") || iequals(w[i], "NONE") ||
               (w[i].size() > 5 && iequals(w[i].substr(0, 5), "CLASS"))) {
      return "class " + quote(w[i]) + ": trust anchors are class IN records";
    } else {
      break;
    }
  }
  if (i == w.size())
    return "the record ends before its type: a trust anchor is a DS or a DNSKEY record";
  const std::span<const std::string> rest = std::span(w).subspan(i + 1);
  std::vector<uint8_t> rdata;
  if (iequals(w[i], "DS")) {
    if (auto e = parse_ds(rest, rdata); !e.empty()) return e;
  } else if (iequals(w[i], "DNSKEY")) {
    if (auto e = parse_dnskey(rest, rdata); !e.empty()) return e;
  } else {
    return "type " + quote(w[i]) +
           " cannot be a trust anchor: only DS and DNSKEY records are (and the owner, TTL "
           "and class come before the type)";
  }
  if (rdata.size() > kMaxRdataOctets)
    return "the RDATA is " + std::to_string(rdata.size()) + " octets, more than the 65535 " +
           "a record can hold";
  if (iequals(w[i], "DS"))
    b.add_ds(*zone, std::move(rdata));
  else
    b.add_dnskey(*zone, std::move(rdata));
  return {};
}

}  // namespace

std::size_t TrustAnchors::count() const noexcept {
  std::size_t n = 0;
  for (const ZoneAnchors& z : zones_)
    n += z.ds.size() + z.dnskey.size();
  return n;
}

const ZoneAnchors* TrustAnchors::find(const wire::Name& zone) const noexcept {
  const auto it =
      std::lower_bound(zones_.begin(), zones_.end(), zone,
                       [](const ZoneAnchors& z, const wire::Name& n) { return z.zone < n; });
  return it != zones_.end() && it->zone == zone ? &*it : nullptr;
}

const ZoneAnchors* TrustAnchors::closest(const wire::Name& name) const {
  // From the name up to the root: at most 127 lookups, each a binary search, whatever the
  // number of zones. The first zone met decides: an anchor, or a negative one.
  if (zones_.empty()) return nullptr;
  wire::Name n = name;
  while (true) {
    if (const ZoneAnchors* z = find(n)) return z;
    if (std::binary_search(insecure_.begin(), insecure_.end(), n)) return nullptr;
    if (n.is_root()) return nullptr;
    n = n.parent();
  }
}

bool TrustAnchors::anchored_at_or_below(const wire::Name& zone) const {
  return std::any_of(zones_.begin(), zones_.end(),
                     [&](const ZoneAnchors& z) { return z.zone.is_subdomain_of(zone); });
}

void TrustAnchors::add_insecure(const wire::Name& zone) {
  const wire::Name z = zone.lowercased();
  const auto it = std::lower_bound(insecure_.begin(), insecure_.end(), z);
  if (it == insecure_.end() || *it != z) insecure_.insert(it, z);
}

std::string TrustAnchors::to_text() const {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
  std::string out;
  for (const ZoneAnchors& z : zones_) {
    const std::string owner = z.zone.to_text();
    for (const auto& ds : z.ds) {
      out += owner + " IN DS " + std::to_string(base::load_u16(ds.data())) + " " +
             std::to_string(ds[2]) + " " + std::to_string(ds[3]) + " ";
      for (std::size_t i = kDsFixed; i < ds.size(); ++i) {
        out.push_back(kHex[ds[i] >> 4]);
        out.push_back(kHex[ds[i] & 0xf]);
      }
      out.push_back('\n');
    }
    for (const auto& key : z.dnskey) {
      out += owner + " IN DNSKEY " + std::to_string(base::load_u16(key.data())) + " " +
             std::to_string(key[2]) + " " + std::to_string(key[3]) + " ";
      const std::size_t n = key.size() - kDnskeyFixed;
      std::string b64((n + 2) / 3 * 4 + 1, '\0');  // EVP_EncodeBlock ends it with a NUL
      const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                      key.data() + kDnskeyFixed, static_cast<int>(n));
      b64.resize(static_cast<std::size_t>(std::max(len, 0)));
      out += b64;
      out.push_back('\n');
    }
  }
  return out;
}

TrustAnchorsResult parse_trust_anchors(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  if (text.size() > kMaxTrustAnchorFileBytes)
    return TrustAnchorsResult::failure(
        source + ": " + std::to_string(text.size()) + " bytes, more than the " +
        std::to_string(kMaxTrustAnchorFileBytes) +
        " a trust anchor file may have (the root's is under 1 KiB): is this the right file?");
  TrustAnchorsBuilder b;
  const auto on_record = [&b](const Record& r) { return parse_record(r, b); };
  if (auto e = split_records(text, on_record); !e.empty())
    return TrustAnchorsResult::failure(source + ":" + e);
  if (b.empty())
    return TrustAnchorsResult::failure(
        source +
        ": no DS or DNSKEY record: a trust anchor file needs at least one (Debian's "
        "dns-root-data has the root's in " +
        std::string(kDefaultTrustAnchorFile) + ")");
  return std::move(b).finish();
}

TrustAnchorsResult load_trust_anchors(const std::string& path) {
  using R = TrustAnchorsResult;
  using S = base::SmallFile::Status;
  base::SmallFile f = base::read_small_file(path, kMaxTrustAnchorFileBytes);
  switch (f.status) {
    case S::Ok:
      if (f.private_text) {
        // Its lines are not quoted: a root-only file's content stays out of the log.
        auto parsed = parse_trust_anchors(f.text, path);
        if (!parsed)
          return R::failure("the trust anchor file " + path +
                            " is not a file of DS or DNSKEY records (the line is not quoted: the "
                            "file is not readable by every user)");
        return parsed;
      }
      return parse_trust_anchors(f.text, path);
    case S::Refused:
      return R::failure("the trust anchor file '" + path + "' " + f.refused);
    case S::CannotOpen: {
      std::string m =
          "cannot open the trust anchor file " + path + " (" + std::strerror(f.error) + ")";
      if (f.error == ENOENT && path == kDefaultTrustAnchorFile)
        m += ": install Debian's dns-root-data package (apt-get install dns-root-data), which "
             "puts the root's keys there, or give another trust anchor file";
      return R::failure(std::move(m));
    }
    case S::NotRegular:
      return R::failure("the trust anchor file " + path + " is not a regular file; not read");
    case S::TooLarge:
      return R::failure("the trust anchor file " + path + " is larger than " +
                        std::to_string(kMaxTrustAnchorFileBytes) +
                        " bytes (the root's is under 1 KiB): is this the right file?");
    case S::CannotRead:
      break;
  }
  return R::failure("cannot read the trust anchor file " + path + " (" + std::strerror(f.error) +
                    ")");
}

std::optional<std::vector<uint8_t>> ds_of_dnskey(const wire::Name& owner,
                                                 std::span<const uint8_t> dnskey_rdata,
                                                 uint8_t digest_type) {
  if (dnskey_rdata.size() < kDnskeyFixed) return std::nullopt;
  auto digest = ds_digest(owner, dnskey_rdata, digest_type);
  if (!digest) return std::nullopt;
  // Sized once and written in place: g++ 14 at -O3 warns falsely (free-nonheap-object) on
  // the reserve-then-append form.
  std::vector<uint8_t> ds(kDsFixed + digest->size());
  const uint16_t tag = key_tag(dnskey_rdata);
  ds[0] = static_cast<uint8_t>(tag >> 8);
  ds[1] = static_cast<uint8_t>(tag);
  ds[2] = dnskey_rdata[3];
  ds[3] = digest_type;
  std::copy(digest->begin(), digest->end(), ds.begin() + kDsFixed);
  return ds;
}

}  // namespace hg::dnssec
