#include "dnstap/codec.h"

#include <bit>
#include <cstring>

#include "base/bytes.h"

namespace hg::dnstap {

std::string_view to_string(MessageType t) noexcept {
  switch (t) {
    case MessageType::AuthQuery:
      return "AUTH_QUERY";
    case MessageType::AuthResponse:
      return "AUTH_RESPONSE";
    case MessageType::ResolverQuery:
      return "RESOLVER_QUERY";
    case MessageType::ResolverResponse:
      return "RESOLVER_RESPONSE";
    case MessageType::ClientQuery:
      return "CLIENT_QUERY";
    case MessageType::ClientResponse:
      return "CLIENT_RESPONSE";
    case MessageType::ForwarderQuery:
      return "FORWARDER_QUERY";
    case MessageType::ForwarderResponse:
      return "FORWARDER_RESPONSE";
    case MessageType::StubQuery:
      return "STUB_QUERY";
    case MessageType::StubResponse:
      return "STUB_RESPONSE";
    case MessageType::ToolQuery:
      return "TOOL_QUERY";
    case MessageType::ToolResponse:
      return "TOOL_RESPONSE";
    case MessageType::UpdateQuery:
      return "UPDATE_QUERY";
    case MessageType::UpdateResponse:
      return "UPDATE_RESPONSE";
  }
  return "UNKNOWN";
}

std::string_view to_string(DecodeStatus s) noexcept {
  switch (s) {
    case DecodeStatus::Ok:
      return "ok";
    case DecodeStatus::Malformed:
      return "malformed";
    case DecodeStatus::NotMessage:
      return "not-message";
  }
  return "unknown";
}

// ---- Encoding ----------------------------------------------------------------------------
// Written by hand rather than through protobuf-c's reflective packer: the daemon encodes two
// frames per answered query, and a straight pass over known fields costs a fraction of it.
// Fields go out in field-number order, as protobuf-c writes them; the unit test checks the
// bytes against protobuf-c's own packer.
//
// Every field number used here is at most 15, so each tag is one constant byte. Sizes are
// summed first (the nested Message's length comes before it), then the bytes are written
// through a plain pointer in one pass.

namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed32 = 5;
constexpr uint32_t kLengthDelimited = 2;

// Dnstap field numbers.
enum : uint32_t { kIdentity = 1, kVersion = 2, kExtra = 3, kMessage = 14, kDnstapType = 15 };
// Message field numbers.
enum : uint32_t {
  kType = 1,
  kSocketFamily = 2,
  kSocketProtocol = 3,
  kQueryAddress = 4,
  kResponseAddress = 5,
  kQueryPort = 6,
  kResponsePort = 7,
  kQueryTimeSec = 8,
  kQueryTimeNsec = 9,
  kQueryMessage = 10,
  kQueryZone = 11,
  kResponseTimeSec = 12,
  kResponseTimeNsec = 13,
  kResponseMessage = 14,
};
constexpr uint64_t kDnstapTypeMessage = 1;

// The one-byte tag of field `field` (1..15) with wire type `wire`.
constexpr uint8_t tag(uint32_t field, uint32_t wire) noexcept {
  return static_cast<uint8_t>((field << 3) | wire);
}

// Bytes of v as a varint: 7 bits per byte, ceil(bits / 7) for 1..64 significant bits, which
// (9 * bits + 64) / 64 equals without a division.
constexpr std::size_t varint_size(uint64_t v) noexcept {
  const auto bits = static_cast<unsigned>(std::bit_width(v | 1U));
  return (9 * bits + 64) / 64;
}
static_assert(varint_size(0) == 1 && varint_size(127) == 1 && varint_size(128) == 2);
static_assert(varint_size((uint64_t{1} << 35) - 1) == 5 && varint_size(uint64_t{1} << 35) == 6);
static_assert(varint_size((uint64_t{1} << 63) - 1) == 9 && varint_size(~uint64_t{0}) == 10);
constexpr std::size_t varint_field_size(uint64_t v) noexcept {
  return 1 + varint_size(v);
}
constexpr std::size_t bytes_field_size(std::size_t len) noexcept {
  return 1 + varint_size(len) + len;
}
constexpr std::size_t time_fields_size(uint64_t sec) noexcept {
  return varint_field_size(sec) + 1 + 4;  // seconds, then the fixed32 nanoseconds
}

std::size_t message_body_size(const Message& m) noexcept {
  std::size_t n = varint_field_size(static_cast<uint64_t>(m.type));
  if (m.family) n += varint_field_size(static_cast<uint64_t>(*m.family));
  if (m.protocol) n += varint_field_size(static_cast<uint64_t>(*m.protocol));
  if (!m.query_address.empty()) n += bytes_field_size(m.query_address.size());
  if (!m.response_address.empty()) n += bytes_field_size(m.response_address.size());
  if (m.query_port) n += varint_field_size(*m.query_port);
  if (m.response_port) n += varint_field_size(*m.response_port);
  if (m.query_time) n += time_fields_size(m.query_time->sec);
  if (!m.query_message.empty()) n += bytes_field_size(m.query_message.size());
  if (!m.query_zone.empty()) n += bytes_field_size(m.query_zone.size());
  if (m.response_time) n += time_fields_size(m.response_time->sec);
  if (!m.response_message.empty()) n += bytes_field_size(m.response_message.size());
  return n;
}

// The Dnstap fields after identity and version: the Message's tag and length, then the type.
constexpr std::size_t frame_rest_size(std::size_t body) noexcept {
  return bytes_field_size(body) + varint_field_size(kDnstapTypeMessage);
}

inline uint8_t* put_varint(uint8_t* p, uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}
// Seconds since 1970 take 5 bytes (2^28 to 2^35 - 1: from 1978 to 3058), written unrolled.
inline uint8_t* put_seconds(uint8_t* p, uint64_t v) noexcept {
  if (v < (uint64_t{1} << 28) || v >= (uint64_t{1} << 35)) return put_varint(p, v);
  p[0] = static_cast<uint8_t>(v | 0x80);
  p[1] = static_cast<uint8_t>((v >> 7) | 0x80);
  p[2] = static_cast<uint8_t>((v >> 14) | 0x80);
  p[3] = static_cast<uint8_t>((v >> 21) | 0x80);
  p[4] = static_cast<uint8_t>(v >> 28);
  return p + 5;
}
inline uint8_t* put_varint_field(uint8_t* p, uint32_t field, uint64_t v) noexcept {
  *p++ = tag(field, kVarint);
  return put_varint(p, v);
}
inline uint8_t* put_bytes_field(uint8_t* p, uint32_t field, std::span<const uint8_t> b) noexcept {
  *p++ = tag(field, kLengthDelimited);
  p = put_varint(p, b.size());
  std::memcpy(p, b.data(), b.size());
  return p + b.size();
}
// An IP address: 4 or 16 bytes, copied with a fixed size (no call) in the usual cases.
inline uint8_t* put_address_field(uint8_t* p, uint32_t field, std::span<const uint8_t> b) noexcept {
  if (b.size() == 4) {
    p[0] = tag(field, kLengthDelimited);
    p[1] = 4;
    std::memcpy(p + 2, b.data(), 4);
    return p + 6;
  }
  if (b.size() == 16) {
    p[0] = tag(field, kLengthDelimited);
    p[1] = 16;
    std::memcpy(p + 2, b.data(), 16);
    return p + 18;
  }
  return put_bytes_field(p, field, b);
}
inline uint8_t* put_time_fields(uint8_t* p, uint32_t sec_field, uint32_t nsec_field,
                                const Timestamp& t) noexcept {
  *p++ = tag(sec_field, kVarint);
  p = put_seconds(p, t.sec);
  *p++ = tag(nsec_field, kFixed32);
  const uint32_t v = t.nsec;  // little-endian, as protobuf's fixed32
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
  return p + 4;
}

// Writes the nested Message's fields at p; returns the end.
uint8_t* pack_fields(const Message& m, uint8_t* p) noexcept {
  p = put_varint_field(p, kType, static_cast<uint64_t>(m.type));
  if (m.family) p = put_varint_field(p, kSocketFamily, static_cast<uint64_t>(*m.family));
  if (m.protocol) p = put_varint_field(p, kSocketProtocol, static_cast<uint64_t>(*m.protocol));
  if (!m.query_address.empty()) p = put_address_field(p, kQueryAddress, m.query_address);
  if (!m.response_address.empty()) p = put_address_field(p, kResponseAddress, m.response_address);
  if (m.query_port) p = put_varint_field(p, kQueryPort, *m.query_port);
  if (m.response_port) p = put_varint_field(p, kResponsePort, *m.response_port);
  if (m.query_time) p = put_time_fields(p, kQueryTimeSec, kQueryTimeNsec, *m.query_time);
  if (!m.query_message.empty()) p = put_bytes_field(p, kQueryMessage, m.query_message);
  if (!m.query_zone.empty()) p = put_bytes_field(p, kQueryZone, m.query_zone);
  if (m.response_time) {
    p = put_time_fields(p, kResponseTimeSec, kResponseTimeNsec, *m.response_time);
  }
  if (!m.response_message.empty()) p = put_bytes_field(p, kResponseMessage, m.response_message);
  return p;
}

// Writes the nested Message (tag, length `body`, fields) and the Dnstap type at p.
uint8_t* pack_rest(const Message& m, std::size_t body, uint8_t* p) noexcept {
  *p++ = tag(kMessage, kLengthDelimited);
  p = put_varint(p, body);
  p = pack_fields(m, p);
  return put_varint_field(p, kDnstapType, kDnstapTypeMessage);
}

// At least the bytes the frame of `m` after a prefix of `prefix_bytes` takes, from the
// sizes of its variable fields alone (each counted with the longest length varint, every
// scalar with its longest encoding); cheaper than message_body_size.
std::size_t frame_bound(const Message& m, std::size_t prefix_bytes) noexcept {
  constexpr std::size_t kVarintMax = 10;
  constexpr std::size_t kBytesFieldOverhead = 1 + kVarintMax;
  // Message tag and length; type, family, protocol (enums); two ports (32 bits); two times;
  // the Dnstap type.
  constexpr std::size_t kFixed =
      kBytesFieldOverhead + 3 * (1 + kVarintMax) + 2 * (1 + 5) + 2 * (1 + kVarintMax + 1 + 4) + 2;
  return prefix_bytes + kFixed + 7 * kBytesFieldOverhead + m.query_address.size() +
         m.response_address.size() + m.query_message.size() + m.query_zone.size() +
         m.response_message.size();
}

std::size_t prefix_size(std::span<const uint8_t> identity,
                        std::span<const uint8_t> version) noexcept {
  std::size_t n = 0;
  if (!identity.empty()) n += bytes_field_size(identity.size());
  if (!version.empty()) n += bytes_field_size(version.size());
  return n;
}

uint8_t* pack_prefix(std::span<const uint8_t> identity, std::span<const uint8_t> version,
                     uint8_t* p) noexcept {
  if (!identity.empty()) p = put_bytes_field(p, kIdentity, identity);
  if (!version.empty()) p = put_bytes_field(p, kVersion, version);
  return p;
}

EncodedSize measure(const Message& m) noexcept {
  const std::size_t body = message_body_size(m);
  return {body, prefix_size(m.identity, m.version) + frame_rest_size(body)};
}

void encode_measured(const Message& m, const EncodedSize& size, uint8_t* out) noexcept {
  pack_rest(m, size.body, pack_prefix(m.identity, m.version, out));
}

}  // namespace

void encode(const Message& m, std::vector<uint8_t>& out) {
  const EncodedSize size = measure(m);
  out.resize(size.total);
  encode_measured(m, size, out.data());
}

std::vector<uint8_t> encode_prefix(std::span<const uint8_t> identity,
                                   std::span<const uint8_t> version) {
  std::vector<uint8_t> out(prefix_size(identity, version));
  pack_prefix(identity, version, out.data());
  return out;
}

EncodedSize measure_prefixed(const Message& m, std::size_t prefix_bytes) noexcept {
  const std::size_t body = message_body_size(m);
  return {body, prefix_bytes + frame_rest_size(body)};
}

void encode_prefixed(const Message& m, const EncodedSize& size, std::span<const uint8_t> prefix,
                     uint8_t* out) noexcept {
  if (!prefix.empty()) std::memcpy(out, prefix.data(), prefix.size());
  pack_rest(m, size.body, out + prefix.size());
}

std::size_t encode_prefixed(const Message& m, std::span<const uint8_t> prefix,
                            std::span<uint8_t> out) noexcept {
  if (frame_bound(m, prefix.size()) > out.size()) {
    // Maybe too small: measure exactly first.
    const EncodedSize size = measure_prefixed(m, prefix.size());
    if (out.size() < size.total) return 0;
    encode_prefixed(m, size, prefix, out.data());
    return size.total;
  }
  // Room for the longest encoding: write the fields first, assuming a one-byte length
  // (a body under 128 bytes), and move them up if the length turns out longer.
  uint8_t* p = out.data();
  if (!prefix.empty()) std::memcpy(p, prefix.data(), prefix.size());
  p += prefix.size();
  *p++ = tag(kMessage, kLengthDelimited);
  uint8_t* const fields = p + 1;
  uint8_t* end = pack_fields(m, fields);
  const auto body = static_cast<std::size_t>(end - fields);
  if (body < 0x80) {
    *p = static_cast<uint8_t>(body);
  } else {
    const std::size_t more = varint_size(body) - 1;
    std::memmove(fields + more, fields, body);
    put_varint(p, body);
    end += more;
  }
  end = put_varint_field(end, kDnstapType, kDnstapTypeMessage);
  return static_cast<std::size_t>(end - out.data());
}

// ---- Decoding ----------------------------------------------------------------------------
// Read in place: one pass over the frame's protobuf fields, keeping the few this struct holds
// and skipping the rest, with every length checked against the bytes left. Nothing is copied
// or allocated; the spans of the result point into the frame.
//
// The results are those of protobuf-c 1.4's generated unpacker (kept as ReferenceDecoder, and
// compared with this one by the unit tests and the fuzz target), including where protobuf-c
// is stricter or looser than the protobuf rules:
//  - a tag is at most 5 bytes; a one-byte tag with field number 0 is an error, a longer one is
//    an unknown field; field numbers wrap at 32 bits as protobuf-c's do;
//  - wire types 0 (varint, at most 10 bytes), 1 (8 bytes), 2 (length, at most 5 bytes) and
//    5 (4 bytes) are read or skipped; 3 and 4 (groups) and 6, 7 are errors;
//  - a known field with another wire type than its own is an error;
//  - 32-bit fields and enums keep the low 32 bits of the varint; an enum keeps any number;
//  - a field given twice in one message: the last one counts, an empty bytes field included;
//  - Dnstap.message given twice: each must be a valid Message on its own (its type present),
//    and they are merged: a scalar of the later one if it has it, else the earlier one's; a
//    bytes field of the later one unless it is empty (protobuf-c then keeps the earlier one);
//  - missing Dnstap.type or Message.type: Malformed.

namespace {

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;  ///< varint, or the fixed32 / fixed64 value
  std::span<const uint8_t> bytes;
};

constexpr uint32_t kFixed64 = 1;

// Reads the field at p (p < end), advancing p past it. False: malformed.
inline bool read_field(const uint8_t*& p, const uint8_t* end, Field& f) noexcept {
  std::size_t rem = static_cast<std::size_t>(end - p);
  const uint8_t b0 = p[0];
  if ((b0 & 0xf8U) == 0) return false;  // field number 0 in a one-byte tag
  f.wire = b0 & 7U;
  uint32_t number = (b0 & 0x7fU) >> 3;
  std::size_t used = 1;
  if ((b0 & 0x80U) != 0) {
    const std::size_t max = rem < 5 ? rem : 5;
    unsigned shift = 4;
    for (;;) {
      if (used == max) return false;
      const uint8_t b = p[used++];
      number |= static_cast<uint32_t>(b & 0x7fU) << shift;
      if ((b & 0x80U) == 0) break;
      shift += 7;
    }
  }
  f.number = number;
  p += used;
  rem -= used;
  switch (f.wire) {
    case kVarint: {
      const std::size_t max = rem < 10 ? rem : 10;
      uint64_t v = 0;
      for (std::size_t i = 0;; ++i) {
        if (i == max) return false;
        const uint8_t b = p[i];
        v |= static_cast<uint64_t>(b & 0x7fU) << (7 * i);
        if ((b & 0x80U) == 0) {
          p += i + 1;
          break;
        }
      }
      f.value = v;
      return true;
    }
    case kFixed64:
      if (rem < 8) return false;
      f.value = 0;
      for (int i = 7; i >= 0; --i)
        f.value = (f.value << 8) | p[i];
      p += 8;
      return true;
    case kLengthDelimited: {
      const std::size_t max = rem < 5 ? rem : 5;
      uint64_t len = 0;
      std::size_t hdr = 0;
      for (;;) {
        if (hdr == max) return false;
        const uint8_t b = p[hdr];
        len |= static_cast<uint64_t>(b & 0x7fU) << (7 * hdr);
        ++hdr;
        if ((b & 0x80U) == 0) break;
      }
      // At most 35 bits: no overflow in the sum.
      if (hdr + len > rem) return false;
      f.bytes = {p + hdr, static_cast<std::size_t>(len)};
      p += hdr + static_cast<std::size_t>(len);
      return true;
    }
    case kFixed32:
      if (rem < 4) return false;
      f.value = base::load_u32_le(p);
      p += 4;
      return true;
    default:  // 3, 4 (groups), 6, 7
      return false;
  }
}

// One Message as read, before the checks decode() applies. Spans are empty when the field is
// absent or empty (the two are not told apart anywhere downstream).
struct Fields {
  bool has_type = false;
  uint32_t type = 0;  // the low 32 bits, as protobuf-c stores an enum
  bool has_family = false, has_protocol = false;
  uint32_t family = 0, protocol = 0;
  bool has_query_port = false, has_response_port = false;
  uint32_t query_port = 0, response_port = 0;
  bool has_query_sec = false, has_query_nsec = false;
  bool has_response_sec = false, has_response_nsec = false;
  uint64_t query_sec = 0, response_sec = 0;
  uint32_t query_nsec = 0, response_nsec = 0;
  std::span<const uint8_t> query_address, response_address, query_message, query_zone,
      response_message;
};

bool read_message(std::span<const uint8_t> body, Fields& m) noexcept {
  const uint8_t* p = body.data();
  const uint8_t* const end = p + body.size();
  Field f;
  while (p < end) {
    if (!read_field(p, end, f)) return false;
    auto varint32 = [&](bool& has, uint32_t& v) {
      if (f.wire != kVarint) return false;
      has = true;
      v = static_cast<uint32_t>(f.value);
      return true;
    };
    auto varint64 = [&](bool& has, uint64_t& v) {
      if (f.wire != kVarint) return false;
      has = true;
      v = f.value;
      return true;
    };
    auto fixed32 = [&](bool& has, uint32_t& v) {
      if (f.wire != kFixed32) return false;
      has = true;
      v = static_cast<uint32_t>(f.value);
      return true;
    };
    auto bytes = [&](std::span<const uint8_t>& v) {
      if (f.wire != kLengthDelimited) return false;
      v = f.bytes;
      return true;
    };
    bool ok = true;
    switch (f.number) {
      case kType:
        ok = varint32(m.has_type, m.type);
        break;
      case kSocketFamily:
        ok = varint32(m.has_family, m.family);
        break;
      case kSocketProtocol:
        ok = varint32(m.has_protocol, m.protocol);
        break;
      case kQueryAddress:
        ok = bytes(m.query_address);
        break;
      case kResponseAddress:
        ok = bytes(m.response_address);
        break;
      case kQueryPort:
        ok = varint32(m.has_query_port, m.query_port);
        break;
      case kResponsePort:
        ok = varint32(m.has_response_port, m.response_port);
        break;
      case kQueryTimeSec:
        ok = varint64(m.has_query_sec, m.query_sec);
        break;
      case kQueryTimeNsec:
        ok = fixed32(m.has_query_nsec, m.query_nsec);
        break;
      case kQueryMessage:
        ok = bytes(m.query_message);
        break;
      case kQueryZone:
        ok = bytes(m.query_zone);
        break;
      case kResponseTimeSec:
        ok = varint64(m.has_response_sec, m.response_sec);
        break;
      case kResponseTimeNsec:
        ok = fixed32(m.has_response_nsec, m.response_nsec);
        break;
      case kResponseMessage:
        ok = bytes(m.response_message);
        break;
      default:  // unknown: skipped
        break;
    }
    if (!ok) return false;
  }
  return m.has_type;
}

// A later occurrence of Dnstap.message merged over an earlier one, as protobuf-c merges them.
void merge_into(const Fields& earlier, Fields& later) noexcept {
  auto scalar = [](bool e_has, const auto& e, bool& l_has, auto& l) {
    if (e_has && !l_has) {
      l_has = true;
      l = e;
    }
  };
  scalar(earlier.has_family, earlier.family, later.has_family, later.family);
  scalar(earlier.has_protocol, earlier.protocol, later.has_protocol, later.protocol);
  scalar(earlier.has_query_port, earlier.query_port, later.has_query_port, later.query_port);
  scalar(earlier.has_response_port, earlier.response_port, later.has_response_port,
         later.response_port);
  scalar(earlier.has_query_sec, earlier.query_sec, later.has_query_sec, later.query_sec);
  scalar(earlier.has_query_nsec, earlier.query_nsec, later.has_query_nsec, later.query_nsec);
  scalar(earlier.has_response_sec, earlier.response_sec, later.has_response_sec,
         later.response_sec);
  scalar(earlier.has_response_nsec, earlier.response_nsec, later.has_response_nsec,
         later.response_nsec);
  auto bytes = [](std::span<const uint8_t> e, std::span<const uint8_t>& l) {
    if (l.empty()) l = e;
  };
  bytes(earlier.query_address, later.query_address);
  bytes(earlier.response_address, later.response_address);
  bytes(earlier.query_message, later.query_message);
  bytes(earlier.query_zone, later.query_zone);
  bytes(earlier.response_message, later.response_message);
}

// An enum as the int protobuf-c stores it, passed on when it is 1..255.
template <class E>
std::optional<E> small_enum(bool has, uint32_t raw) noexcept {
  const auto v = static_cast<int32_t>(raw);
  if (!has || v < 1 || v > 255) return std::nullopt;
  return static_cast<E>(v);
}

std::optional<Timestamp> time_of(bool has_sec, uint64_t sec, bool has_nsec,
                                 uint32_t nsec) noexcept {
  if (!has_sec) return std::nullopt;
  return Timestamp{sec, has_nsec ? nsec : 0};
}

}  // namespace

DecodeStatus decode(std::span<const uint8_t> frame, Message& out) noexcept {
  out = Message{};
  std::span<const uint8_t> identity, version;
  bool has_type = false, has_message = false;
  uint32_t dnstap_type = 0;
  Fields m, next;
  const uint8_t* p = frame.data();
  const uint8_t* const end = p + frame.size();
  Field f;
  while (p < end) {
    if (!read_field(p, end, f)) return DecodeStatus::Malformed;
    switch (f.number) {
      case kIdentity:
      case kVersion:
      case kExtra:
        if (f.wire != kLengthDelimited) return DecodeStatus::Malformed;
        if (f.number == kIdentity) identity = f.bytes;
        if (f.number == kVersion) version = f.bytes;
        break;
      case kMessage:
        if (f.wire != kLengthDelimited) return DecodeStatus::Malformed;
        if (!has_message) {
          if (!read_message(f.bytes, m)) return DecodeStatus::Malformed;
          has_message = true;
        } else {
          next = Fields{};
          if (!read_message(f.bytes, next)) return DecodeStatus::Malformed;
          merge_into(m, next);
          m = next;
        }
        break;
      case kDnstapType:
        if (f.wire != kVarint) return DecodeStatus::Malformed;
        has_type = true;
        dnstap_type = static_cast<uint32_t>(f.value);
        break;
      default:  // unknown: skipped
        break;
    }
  }
  if (!has_type) return DecodeStatus::Malformed;
  if (dnstap_type != kDnstapTypeMessage || !has_message) return DecodeStatus::NotMessage;
  const auto type = static_cast<int32_t>(m.type);
  if (type < 1 || type > 255) return DecodeStatus::Malformed;
  out.type = static_cast<MessageType>(type);
  out.family = small_enum<Family>(m.has_family, m.family);
  out.protocol = small_enum<Protocol>(m.has_protocol, m.protocol);
  out.query_address = m.query_address;
  out.response_address = m.response_address;
  if (m.has_query_port) out.query_port = m.query_port;
  if (m.has_response_port) out.response_port = m.response_port;
  out.query_time = time_of(m.has_query_sec, m.query_sec, m.has_query_nsec, m.query_nsec);
  out.response_time =
      time_of(m.has_response_sec, m.response_sec, m.has_response_nsec, m.response_nsec);
  out.query_message = m.query_message;
  out.response_message = m.response_message;
  out.query_zone = m.query_zone;
  out.identity = identity;
  out.version = version;
  return DecodeStatus::Ok;
}

}  // namespace hg::dnstap
