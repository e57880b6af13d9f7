// StreamFramer: the one reader of length-prefixed messages from a byte stream, for DNS over
// TCP (tcp_listener.h; RFC 1035 §4.2.2, RFC 7766 §8) and DNS over TLS to an upstream
// (resolver/upstream/dot.h; RFC 7858 §3.3). Every message is preceded by its length as a
// 2-byte big-endian integer:
//
//   | len (2) | message (len bytes) | len (2) | message | ...
//
// The bytes arrive in whatever pieces the kernel or TLS hands over: one byte at a time, a
// length prefix split across two reads, many messages in one read. The framer holds them
// until a message is whole and hands it out in place (no copy). It knows nothing of what a
// message means beyond its length; a user that needs more (DoT: a DNS header's 12 bytes)
// says so in Limits.
//
// Bounds: at most 2 + max_length bytes are buffered, so a peer that never completes a
// message holds that much and no more. A length outside [min_length, max_length] breaks the
// stream: the bytes after it cannot be trusted to be framed, so nothing more comes out
// until reset(). With the default max_length (65535, all a prefix can say) a buffer that is
// full always holds a whole message, so reading can never stall on the cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hg::resolver {

class StreamFramer {
 public:
  struct Limits {
    /// Shorter messages break the stream (0: an empty message is handed out as one).
    std::size_t min_length = 0;
    /// Longer messages break the stream; at most 65535 (the prefix's range).
    std::size_t max_length = 65535;
  };

  StreamFramer() = default;
  explicit StreamFramer(Limits limits) noexcept;

  /// Room for up to `want` bytes read from the stream, at most room(): read into it, then
  /// commit() what was read. Empty when the buffer is full (or the stream broken). Valid
  /// until the next call of any other member.
  std::span<uint8_t> write_area(std::size_t want);
  /// `n` bytes (at most the last write_area()'s size) were written into the write area.
  void commit(std::size_t n) noexcept;
  /// Copies as many of `bytes` as fit (room()); returns how many. A caller with more takes
  /// messages out with next() and feeds the rest.
  std::size_t feed(std::span<const uint8_t> bytes);

  /// The next complete message, or nullopt when more bytes are needed or the stream is
  /// broken. Valid (and writable) until the next write_area(), feed() or reset().
  std::optional<std::span<uint8_t>> next() noexcept;

  bool broken() const noexcept { return broken_; }
  /// Bytes held that next() has not handed out.
  std::size_t buffered() const noexcept { return end_ - start_; }
  bool empty() const noexcept { return end_ == start_; }
  /// How many more bytes may be buffered (0 when broken).
  std::size_t room() const noexcept;
  /// Forgets every byte held and the broken state (a new connection).
  void reset() noexcept;

  /// Appends `message` to `out` with its length prefix; false (nothing appended) when it is
  /// longer than a prefix can say.
  static bool append_framed(std::vector<uint8_t>& out, std::span<const uint8_t> message);

 private:
  Limits limits_{};
  std::vector<uint8_t> buf_;  // [start_, end_) held; grows to at most 2 + max_length
  std::size_t start_ = 0;
  std::size_t end_ = 0;
  bool broken_ = false;
};

}  // namespace hg::resolver
