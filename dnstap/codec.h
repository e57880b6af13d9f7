// One dnstap message as a plain struct, and its protobuf form (the payload of one Frame
// Streams data frame, content type "protobuf:dnstap.Dnstap").
//
// Encoding fills a caller's buffer or vector; decoding reads the frame in place and returns
// spans that point into it, so reading a long trace neither copies nor allocates per message.
// Decoding is bounds-checked and returns a status for any input; its results are those of
// protobuf-c's generated unpacker (tests/dnstap_reference/reference_decoder.h), which the tests
// compare it to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace hg::dnstap {

/// Message.Type from the dnstap schema (same numbers). Values outside this list decode as
/// they are (a reader skips types it does not know).
enum class MessageType : uint8_t {
  AuthQuery = 1,
  AuthResponse = 2,
  ResolverQuery = 3,
  ResolverResponse = 4,
  ClientQuery = 5,
  ClientResponse = 6,
  ForwarderQuery = 7,
  ForwarderResponse = 8,
  StubQuery = 9,
  StubResponse = 10,
  ToolQuery = 11,
  ToolResponse = 12,
  UpdateQuery = 13,
  UpdateResponse = 14,
};

/// SocketFamily (same numbers).
enum class Family : uint8_t { Inet = 1, Inet6 = 2 };

/// SocketProtocol (same numbers).
enum class Protocol : uint8_t {
  Udp = 1,
  Tcp = 2,
  Dot = 3,
  Doh = 4,
  DnsCryptUdp = 5,
  DnsCryptTcp = 6,
  Doq = 7,
};

/// Short uppercase name as in the schema, e.g. "CLIENT_QUERY"; "UNKNOWN" otherwise.
std::string_view to_string(MessageType t) noexcept;

/// True for the *_QUERY types (odd numbers), false for the *_RESPONSE ones.
constexpr bool is_query(MessageType t) noexcept {
  return (static_cast<unsigned>(t) & 1U) != 0;
}

struct Timestamp {
  uint64_t sec = 0;
  uint32_t nsec = 0;  ///< 0..999'999'999 when written by us; a decoder passes on what it got
  friend bool operator==(const Timestamp&, const Timestamp&) = default;
};

/// One dnstap Message plus the identity and version of the enclosing Dnstap frame.
/// Absent fields: empty spans, empty optionals. Spans are not owned: for encoding they point
/// at the caller's memory, after decoding into the decoded frame.
struct Message {
  MessageType type = MessageType::ClientQuery;
  std::optional<Family> family;
  std::optional<Protocol> protocol;
  std::span<const uint8_t> query_address;     ///< 4 (IPv4) or 16 (IPv6) bytes: the client
  std::span<const uint8_t> response_address;  ///< the server's address
  std::optional<uint32_t> query_port;
  std::optional<uint32_t> response_port;
  std::optional<Timestamp> query_time;
  std::optional<Timestamp> response_time;
  std::span<const uint8_t> query_message;     ///< DNS wire format
  std::span<const uint8_t> response_message;  ///< DNS wire format
  std::span<const uint8_t> query_zone;        ///< wire-format name (authoritative servers)
  std::span<const uint8_t> identity;          ///< Dnstap.identity (server name)
  std::span<const uint8_t> version;           ///< Dnstap.version (software version)
};

/// Packs `m` as a Dnstap frame, replacing the contents of `out`.
void encode(const Message& m, std::vector<uint8_t>& out);

/// The sizes of a frame, computed once by measure_prefixed() and used by encode_prefixed().
struct EncodedSize {
  std::size_t body = 0;   ///< the nested Message
  std::size_t total = 0;  ///< the whole Dnstap frame
};

/// For writers whose identity and version never change: those two fields encoded once (they
/// open every frame), then each frame measured and written with that prefix in place of
/// m.identity and m.version, which are ignored. The bytes are those of encode() with
/// m.identity and m.version set to the prefix's.
std::vector<uint8_t> encode_prefix(std::span<const uint8_t> identity,
                                   std::span<const uint8_t> version);
EncodedSize measure_prefixed(const Message& m, std::size_t prefix_size) noexcept;
/// Writes the frame into out[0, size.total); `size` must be measure_prefixed(m, prefix.size()).
void encode_prefixed(const Message& m, const EncodedSize& size, std::span<const uint8_t> prefix,
                     uint8_t* out) noexcept;
/// The same in one pass: measures and writes the frame into `out`; returns its size, or 0
/// (nothing usable written) when `out` is too small.
std::size_t encode_prefixed(const Message& m, std::span<const uint8_t> prefix,
                            std::span<uint8_t> out) noexcept;

enum class DecodeStatus : uint8_t {
  Ok,
  Malformed,   ///< not a valid protobuf Dnstap (truncated, bad tags, missing required field)
  NotMessage,  ///< a valid Dnstap whose type is not MESSAGE or which carries no message
};

/// "ok", "malformed", "not-message".
std::string_view to_string(DecodeStatus s) noexcept;

/// Decodes one frame's payload in place: the spans of `out` point into `frame` and are valid
/// as long as its bytes are. On anything but Ok, `out` is reset to a default Message.
/// Allocates nothing.
DecodeStatus decode(std::span<const uint8_t> frame, Message& out) noexcept;

}  // namespace hg::dnstap
