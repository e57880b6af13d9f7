#include "wire/name.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace hg::wire {

namespace {

// Presentation-format characters that dig escapes with a backslash.
bool needs_backslash(uint8_t c) {
  switch (c) {
    case '.':
    case '\\':
    case '"':
    case ';':
    case '(':
    case ')':
    case '@':
    case '$':
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<Name> Name::from_text(std::string_view text) noexcept {
  Name n;
  if (text == "." || text.empty()) {
    if (text.empty()) return Error{ParseError::EmptyLabel, 0};
    return n;
  }
  std::size_t out = 0;    // write position in n.buf_
  std::size_t label = 0;  // position of the current label's length byte
  uint8_t label_len = 0;
  auto put = [&](uint8_t c, std::size_t at) -> Status {
    if (label_len == kMaxLabelOctets) return Error{ParseError::LabelTooLong, at};
    // Room for this byte plus the root label still to come.
    if (out + 1 >= kMaxNameOctets) return Error{ParseError::NameTooLong, at};
    n.buf_[++out] = c;
    ++label_len;
    return {};
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<uint8_t>(text[i]);
    if (c == '.') {
      if (label_len == 0) return Error{ParseError::EmptyLabel, i};
      n.buf_[label] = label_len;
      label = ++out;
      label_len = 0;
      if (out >= kMaxNameOctets) return Error{ParseError::NameTooLong, i};
      if (i + 1 == text.size()) break;  // trailing dot: absolute name
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= text.size()) return Error{ParseError::BadEscape, i};
      auto d = static_cast<uint8_t>(text[i + 1]);
      if (d >= '0' && d <= '9') {
        if (i + 3 >= text.size()) return Error{ParseError::BadEscape, i};
        unsigned v = 0;
        for (std::size_t k = 1; k <= 3; ++k) {
          auto ch = static_cast<uint8_t>(text[i + k]);
          if (ch < '0' || ch > '9') return Error{ParseError::BadEscape, i};
          v = v * 10 + (ch - '0');
        }
        if (v > 255) return Error{ParseError::BadEscape, i};
        if (auto s = put(static_cast<uint8_t>(v), i); !s) return s.error();
        i += 3;
      } else {
        if (auto s = put(d, i); !s) return s.error();
        i += 1;
      }
      continue;
    }
    if (auto s = put(c, i); !s) return s.error();
  }
  if (label_len > 0) {
    n.buf_[label] = label_len;
    label = ++out;
  }
  // `label` now indexes the root label's slot.
  if (label >= kMaxNameOctets) return Error{ParseError::NameTooLong, text.size()};
  n.buf_[label] = 0;
  n.len_ = static_cast<uint8_t>(label + 1);
  return n;
}

Result<Name> Name::from_wire(std::span<const uint8_t> wire) noexcept {
  WireReader r(wire);
  auto n = read_name(r);
  if (!n) return n;
  // Reject compression pointers: an uncompressed name must be self-contained.
  if (n->size() != r.offset()) return Error{ParseError::PointerNotBackward, 0};
  if (!r.at_end()) return Error{ParseError::TrailingBytes, r.offset()};
  return n;
}

std::string Name::to_text() const {
  if (is_root()) return ".";
  std::string s;
  s.reserve(len_ + 8);
  std::size_t i = 0;
  while (buf_[i] != 0) {
    uint8_t l = buf_[i];
    for (std::size_t k = i + 1; k <= i + l; ++k) {
      uint8_t c = buf_[k];
      if (needs_backslash(c)) {
        s.push_back('\\');
        s.push_back(static_cast<char>(c));
      } else if (c <= 0x20 || c >= 0x7f) {
        char esc[5] = {'\\', static_cast<char>('0' + c / 100), static_cast<char>('0' + c / 10 % 10),
                       static_cast<char>('0' + c % 10), 0};
        s.append(esc, 4);
      } else {
        s.push_back(static_cast<char>(c));
      }
    }
    s.push_back('.');
    i += l + 1u;
  }
  return s;
}

int Name::label_count() const noexcept {
  int n = 0;
  for (std::size_t i = 0; buf_[i] != 0; i += buf_[i] + 1u)
    ++n;
  return n;
}

Name Name::lowercased() const noexcept {
  Name out;
  out.len_ = len_;
  for (std::size_t i = 0; i < len_; ++i)
    out.buf_[i] = ascii_lower(buf_[i]);
  // Length bytes are < 64, never in 'A'..'Z' (65..90), so folding them is harmless.
  return out;
}

bool Name::is_subdomain_of(const Name& zone) const noexcept {
  if (zone.len_ > len_) return false;
  // Walk our labels until the remaining suffix has the zone's length; it must start on a
  // label boundary and match case-insensitively.
  std::size_t i = 0;
  while (len_ - i > zone.len_)
    i += buf_[i] + 1u;
  if (len_ - i != zone.len_) return false;
  for (std::size_t k = 0; k < zone.len_; ++k) {
    if (ascii_lower(buf_[i + k]) != ascii_lower(zone.buf_[k])) return false;
  }
  return true;
}

Name Name::parent(int n) const noexcept {
  std::size_t i = 0;
  for (int k = 0; k < n && buf_[i] != 0; ++k)
    i += buf_[i] + 1u;
  Name out;
  out.len_ = static_cast<uint8_t>(len_ - i);
  std::memcpy(out.buf_.data(), buf_.data() + i, out.len_);
  return out;
}

std::size_t Name::hash() const noexcept {
  uint64_t h = base::kFnv1aBasis;
  for (std::size_t i = 0; i < len_; ++i)
    h = base::fnv1a_step(h, ascii_lower(buf_[i]));
  return static_cast<std::size_t>(h);
}

bool operator==(const Name& a, const Name& b) noexcept {
  if (a.len_ != b.len_) return false;
  // Usually the same bytes (an answer echoes our own lowercased question): one memcmp.
  if (std::memcmp(a.buf_.data(), b.buf_.data(), a.len_) == 0) return true;
  for (std::size_t i = 0; i < a.len_; ++i) {
    if (ascii_lower(a.buf_[i]) != ascii_lower(b.buf_[i])) return false;
  }
  return true;
}

bool Name::identical(const Name& other) const noexcept {
  return len_ == other.len_ && std::memcmp(buf_.data(), other.buf_.data(), len_) == 0;
}

std::strong_ordering operator<=>(const Name& a, const Name& b) noexcept {
  // RFC 4034 §6.1: compare label by label starting from the root; within a label, bytes as
  // unsigned octets after lowercasing; a name that runs out of labels first sorts first.
  uint8_t ia[128], ib[128];  // label start offsets (≤127 labels)
  int na = 0, nb = 0;
  for (std::size_t i = 0; a.buf_[i] != 0; i += a.buf_[i] + 1u)
    ia[na++] = static_cast<uint8_t>(i);
  for (std::size_t i = 0; b.buf_[i] != 0; i += b.buf_[i] + 1u)
    ib[nb++] = static_cast<uint8_t>(i);
  while (na > 0 && nb > 0) {
    const uint8_t* la = &a.buf_[ia[--na]];
    const uint8_t* lb = &b.buf_[ib[--nb]];
    std::size_t n = std::min(la[0], lb[0]);
    for (std::size_t k = 1; k <= n; ++k) {
      uint8_t ca = ascii_lower(la[k]), cb = ascii_lower(lb[k]);
      if (ca != cb) return ca <=> cb;
    }
    if (la[0] != lb[0]) return la[0] <=> lb[0];
  }
  return na <=> nb;
}

namespace {

// The one name decoder. `out` may be null (skip_name). Returns the in-place end in r.
template <bool kBuild>
Status decode_name(WireReader& r, std::array<uint8_t, kMaxNameOctets>* out, uint8_t* out_len) {
  const auto data = r.data();
  std::size_t pos = r.offset();
  std::size_t part_start = pos;   // start of the current name part (for the backward rule)
  std::size_t resume = SIZE_MAX;  // where r continues after the first pointer
  std::size_t len = 0;            // wire octets so far, length bytes included
  // After a jump, the name must end before the pointer that jumped (see below); `limit` is
  // that pointer's offset, `jumped_from` too (for the error), SIZE_MAX before any jump.
  std::size_t limit = data.size();
  std::size_t jumped_from = SIZE_MAX;
  int hops = 0;
  for (;;) {
    if (pos >= limit) {
      if (jumped_from != SIZE_MAX) return Error{ParseError::PointerNotBackward, jumped_from};
      return Error{ParseError::Truncated, pos};
    }
    uint8_t l = data[pos];
    switch (l & 0xC0) {
      case 0x00: {
        if (l == 0) {
          if (len + 1 > kMaxNameOctets) return Error{ParseError::NameTooLong, pos};
          if constexpr (kBuild) (*out)[len] = 0;
          ++len;
          if constexpr (kBuild) *out_len = static_cast<uint8_t>(len);
          if (resume == SIZE_MAX) resume = pos + 1;
          return r.seek(resume);
        }
        if (pos + 1 + l > limit) {
          if (jumped_from != SIZE_MAX) return Error{ParseError::PointerNotBackward, jumped_from};
          return Error{ParseError::Truncated, pos};
        }
        // Keep room for the root label that must follow.
        if (len + 1 + l + 1 > kMaxNameOctets) return Error{ParseError::NameTooLong, pos};
        if constexpr (kBuild) std::memcpy(out->data() + len, data.data() + pos, 1u + l);
        len += 1u + l;
        pos += 1u + l;
        break;
      }
      case 0xC0: {
        if (pos + 2 > limit) {
          if (jumped_from != SIZE_MAX) return Error{ParseError::PointerNotBackward, jumped_from};
          return Error{ParseError::Truncated, pos};
        }
        std::size_t target = static_cast<std::size_t>(((l & 0x3F) << 8) | data[pos + 1]);
        // RFC 1035 §4.1.4: a pointer names a *prior* occurrence. Requiring it to point before
        // the start of the current name part makes every jump go backwards, so decoding
        // cannot loop; the hop limit bounds the work on long pointer chains.
        if (target >= part_start) return Error{ParseError::PointerNotBackward, pos};
        // The first 12 octets of a message are its header. A name "found" there decodes to
        // whatever the ID and flags happen to be, and changes when a responder rewrites them
        // (hourglass does, for every client), so a pointer there is never valid.
        if (target < 12) return Error{ParseError::PointerIntoHeader, pos};
        if (++hops > kMaxPointerHops) return Error{ParseError::TooManyPointers, pos};
        if (resume == SIZE_MAX) resume = pos + 2;
        // The name found at the target must also end before this pointer: otherwise it runs
        // through the pointer itself and the bytes after it (fixed fields, TTLs, RDATA), and
        // means something else as soon as a responder rewrites a TTL or drops a record
        // (found by handler_fuzz). A real earlier occurrence always ends before the pointer.
        limit = jumped_from = pos;
        pos = part_start = target;
        break;
      }
      default:
        // 0x40 (RFC 6891 extended label types, never deployed) and 0x80 (reserved).
        return Error{ParseError::BadLabelType, pos};
    }
  }
}

}  // namespace

Result<Name> read_name(WireReader& r) noexcept {
  Name n;
  if (auto s = decode_name<true>(r, &n.buf_, &n.len_); !s) return s.error();
  return n;
}

Status skip_name(WireReader& r) noexcept {
  return decode_name<false>(r, nullptr, nullptr);
}

bool name_equals_at_unchecked(std::span<const uint8_t> packet, std::size_t offset,
                              std::span<const uint8_t> name_wire, bool match_case) noexcept {
  std::size_t i = 0;
  std::size_t pos = offset;
  for (int hops = 0; hops <= kMaxPointerHops;) {
    if (pos >= packet.size() || i >= name_wire.size()) return false;
    uint8_t l = packet[pos];
    if ((l & 0xC0) == 0xC0) {
      if (pos + 1 >= packet.size()) return false;
      pos = static_cast<std::size_t>(((l & 0x3F) << 8) | packet[pos + 1]);
      ++hops;
      continue;
    }
    if (l != name_wire[i]) return false;
    if (l == 0) return true;
    if (pos + 1 + l > packet.size() || i + 1 + l > name_wire.size()) return false;
    for (std::size_t k = 1; k <= l; ++k) {
      const uint8_t a = packet[pos + k], b = name_wire[i + k];
      if (a != b && (match_case || ascii_lower(a) != ascii_lower(b))) return false;
    }
    pos += 1u + l;
    i += 1u + l;
  }
  return false;
}

}  // namespace hg::wire
