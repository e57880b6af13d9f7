// Checked<T>: a value or a one-line, human-readable error message. The resolver's start-up
// code (configuration, binding sockets, opening files) returns it instead of throwing; the
// message names what failed and how to fix it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace hg::base {

/// A value or a one-line error message; member names follow std::expected like wire::Result.
template <class T>
class [[nodiscard]] Checked {
 public:
  Checked(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  static Checked failure(std::string message) { return Checked(Tag{}, std::move(message)); }

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_); }

 private:
  struct Tag {};
  Checked(Tag, std::string message) : v_(std::in_place_index<1>, std::move(message)) {}
  std::variant<T, std::string> v_;
};

}  // namespace hg::base
