// Result<T>: a value or a ParseError with the byte offset where it was found.
//
// The packet path never throws (docs/architecture.md §7). Every parser returns a Result and callers
// test it. The member names follow std::expected (has_value/value/error/operator bool) so that
// moving to std::expected once the toolchains have it is a search and replace.
//
// Must not include anything beyond the standard library.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <variant>

namespace hg::wire {

/// Every distinct way an untrusted DNS message (or name in text form) can be malformed.
/// Each value names one cause; the offset travels beside it in Error.
enum class ParseError : uint8_t {
  Truncated,           ///< a read needed more bytes than remain
  ShortHeader,         ///< fewer than 12 bytes: not a DNS message at all
  LabelTooLong,        ///< text form: a label over 63 octets (in wire form 0x40+ is BadLabelType)
  NameTooLong,         ///< a name over 255 octets in wire form
  BadLabelType,        ///< label type 0x40 or 0x80 (RFC 6891 §5 / RFC 2673, obsolete)
  PointerNotBackward,  ///< a compression pointer that does not point before the current name
  PointerIntoHeader,   ///< a compression pointer to offsets 0-11: the header is never a name
  TooManyPointers,     ///< more compression jumps than any legal name needs
  CountMismatch,       ///< a section count claims more records than the message holds
  TrailingBytes,       ///< bytes after the last counted record (strict mode)
  RdataLength,         ///< RDLENGTH disagrees with the record type's content
  BadOpt,              ///< OPT outside the additional section, non-root owner, bad options
  MultipleOpt,         ///< more than one OPT record (RFC 6891 §6.1.1)
  BadEscape,           ///< presentation text: bad \DDD or dangling backslash
  EmptyLabel,          ///< presentation text: "a..b" or a leading dot
  BadText,             ///< presentation text that is not a valid value for its type
};

/// Short, stable, lowercase identifier, e.g. "pointer-not-backward"; used in logs and metrics.
std::string_view to_string(ParseError e) noexcept;

/// A parse failure: what went wrong and at which byte offset of the input.
struct Error {
  ParseError code;
  std::size_t offset;
  friend bool operator==(const Error&, const Error&) = default;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(e) {}                 // NOLINT: implicit by design
  Result(ParseError code, std::size_t offset) : v_(Error{code, offset}) {}

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Error error() const noexcept {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

/// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(e), ok_(false) {}  // NOLINT: implicit by design
  Result(ParseError code, std::size_t offset) : err_{code, offset}, ok_(false) {}
  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  Error error() const noexcept {
    assert(!ok_);
    return err_;
  }

 private:
  Error err_{ParseError::Truncated, 0};
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace hg::wire
