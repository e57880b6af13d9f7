// Name: a domain name in uncompressed wire form, at most 255 octets, stored inline.
//
// A Name never allocates: it holds its wire bytes (length-prefixed labels ending with the root
// label) in a fixed 255-byte array. It keeps the letter case it was read with; comparison,
// hashing and ordering ignore ASCII case (RFC 4343). read_name() is the only decoder of names
// from packets (docs/architecture.md §7); from_text()/to_text() handle presentation format (RFC
// 1035 §5.1).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "wire/reader.h"
#include "wire/result.h"

namespace hg::wire {

inline constexpr std::size_t kMaxNameOctets = 255;  // RFC 1035 §3.1, length bytes and root included
inline constexpr std::size_t kMaxLabelOctets = 63;  // RFC 1035 §3.1
/// A 255-octet name has at most 127 labels, so a legal name never needs more jumps than that.
inline constexpr int kMaxPointerHops = 127;

constexpr uint8_t ascii_lower(uint8_t c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<uint8_t>(c + 32) : c;
}

class Name {
 public:
  /// The root name ".".
  Name() noexcept : len_(1) { buf_[0] = 0; }

  /// Parses presentation text: "www.example.com", "www.example.com.", "." for the root,
  /// with "\." and "\DDD" escapes. Relative names are taken as absolute (a trailing dot is
  /// optional). Errors: EmptyLabel, LabelTooLong, NameTooLong, BadEscape (offset = index
  /// into the text).
  static Result<Name> from_text(std::string_view text) noexcept;

  /// Builds a Name from uncompressed wire bytes that must be a complete valid name.
  static Result<Name> from_wire(std::span<const uint8_t> wire) noexcept;

  /// Presentation form with a trailing dot; escapes '.', '\\', '"', ';', '(', ')', '@', '$'
  /// and non-printable bytes as \DDD, as dig does.
  std::string to_text() const;

  /// Wire bytes: labels and the terminating root label.
  std::span<const uint8_t> wire() const noexcept { return {buf_.data(), len_}; }
  std::size_t size() const noexcept { return len_; }
  bool is_root() const noexcept { return len_ == 1; }
  /// Number of labels, not counting the root ("www.example.com" → 3).
  int label_count() const noexcept;

  /// The same name with ASCII letters folded to lower case: the canonical form for keys.
  Name lowercased() const noexcept;

  /// True when this name equals `zone` or lies below it, ignoring case
  /// ("a.b.example.com" is under "example.com"; "badexample.com" is not).
  bool is_subdomain_of(const Name& zone) const noexcept;

  /// The name with its first `n` labels removed (n ≤ label_count()).
  Name parent(int n = 1) const noexcept;

  /// Case-insensitive hash (FNV-1a over lowercased bytes); equal names hash equal.
  std::size_t hash() const noexcept;

  /// Case-insensitive equality (RFC 4343).
  friend bool operator==(const Name& a, const Name& b) noexcept;
  /// Canonical DNS ordering (RFC 4034 §6.1): by labels from the root, case-insensitively.
  friend std::strong_ordering operator<=>(const Name& a, const Name& b) noexcept;

  /// Exact byte equality, case included.
  bool identical(const Name& other) const noexcept;

 private:
  friend Result<Name> read_name(WireReader& r) noexcept;
  std::array<uint8_t, kMaxNameOctets> buf_;
  uint8_t len_;
};

/// Reads a possibly compressed name at r's cursor and advances r past its in-place part
/// (up to and including the first pointer, or the root label). Pointers are followed within
/// r.data() and must point before the start of the name part that contains them
/// (RFC 1035 §4.1.4: "a prior occurrence"), at most kMaxPointerHops times.
/// Errors: Truncated, LabelTooLong (never raised: 0x40/0x80 are BadLabelType), BadLabelType,
/// PointerNotBackward, TooManyPointers, NameTooLong — each with the offset of the offending
/// byte.
Result<Name> read_name(WireReader& r) noexcept;

/// Like read_name but only validates and skips the name, building nothing.
Status skip_name(WireReader& r) noexcept;

/// Compares the (possibly compressed) name at `offset` in `packet` with `name`, ignoring case
/// unless `match_case`. The packet is assumed already validated (used by the writer's
/// compression on its own output).
bool name_equals_at_unchecked(std::span<const uint8_t> packet, std::size_t offset,
                              std::span<const uint8_t> name_wire, bool match_case = false) noexcept;

struct NameHash {
  std::size_t operator()(const Name& n) const noexcept { return n.hash(); }
};

}  // namespace hg::wire
