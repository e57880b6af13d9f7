#include "dnstap/codec.h"

#include <cstring>

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

namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed32 = 5;
constexpr uint32_t kLengthDelimited = 2;

constexpr std::size_t varint_size(uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

constexpr uint64_t tag(uint32_t field, uint32_t wire_type) noexcept {
  return (static_cast<uint64_t>(field) << 3) | wire_type;
}

// Tags of fields 1..15 fit one byte.
constexpr std::size_t varint_field_size(uint64_t v) noexcept {
  return 1 + varint_size(v);
}
constexpr std::size_t bytes_field_size(std::size_t len) noexcept {
  return 1 + varint_size(len) + len;
}

std::size_t message_body_size(const Message& m) noexcept {
  std::size_t n = varint_field_size(static_cast<uint64_t>(m.type));
  if (m.family) n += varint_field_size(static_cast<uint64_t>(*m.family));
  if (m.protocol) n += varint_field_size(static_cast<uint64_t>(*m.protocol));
  if (!m.query_address.empty()) n += bytes_field_size(m.query_address.size());
  if (!m.response_address.empty()) n += bytes_field_size(m.response_address.size());
  if (m.query_port) n += varint_field_size(*m.query_port);
  if (m.response_port) n += varint_field_size(*m.response_port);
  if (m.query_time) n += varint_field_size(m.query_time->sec) + 1 + 4;
  if (!m.query_message.empty()) n += bytes_field_size(m.query_message.size());
  if (!m.query_zone.empty()) n += bytes_field_size(m.query_zone.size());
  if (m.response_time) n += varint_field_size(m.response_time->sec) + 1 + 4;
  if (!m.response_message.empty()) n += bytes_field_size(m.response_message.size());
  return n;
}

class Packer {
 public:
  explicit Packer(uint8_t* p) noexcept : p_(p) {}
  uint8_t* end() const noexcept { return p_; }

  void varint(uint64_t v) noexcept {
    while (v >= 0x80) {
      *p_++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<uint8_t>(v);
  }
  void varint_field(uint32_t field, uint64_t v) noexcept {
    varint(tag(field, kVarint));
    varint(v);
  }
  void fixed32_field(uint32_t field, uint32_t v) noexcept {
    varint(tag(field, kFixed32));
    for (int i = 0; i < 4; ++i) {
      *p_++ = static_cast<uint8_t>(v);
      v >>= 8;
    }
  }
  void bytes_field(uint32_t field, std::span<const uint8_t> b) noexcept {
    varint(tag(field, kLengthDelimited));
    varint(b.size());
    if (!b.empty()) std::memcpy(p_, b.data(), b.size());
    p_ += b.size();
  }

 private:
  uint8_t* p_;
};

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

std::size_t frame_size(const Message& m, std::size_t body) noexcept {
  std::size_t n = bytes_field_size(body) + varint_field_size(kDnstapTypeMessage);
  if (!m.identity.empty()) n += bytes_field_size(m.identity.size());
  if (!m.version.empty()) n += bytes_field_size(m.version.size());
  return n;
}

// The Dnstap fields after identity and version: the nested Message, then the type.
void pack_rest(const Message& m, std::size_t body, Packer& p) noexcept {
  p.varint(tag(kMessage, kLengthDelimited));
  p.varint(body);
  p.varint_field(kType, static_cast<uint64_t>(m.type));
  if (m.family) p.varint_field(kSocketFamily, static_cast<uint64_t>(*m.family));
  if (m.protocol) p.varint_field(kSocketProtocol, static_cast<uint64_t>(*m.protocol));
  if (!m.query_address.empty()) p.bytes_field(kQueryAddress, m.query_address);
  if (!m.response_address.empty()) p.bytes_field(kResponseAddress, m.response_address);
  if (m.query_port) p.varint_field(kQueryPort, *m.query_port);
  if (m.response_port) p.varint_field(kResponsePort, *m.response_port);
  if (m.query_time) {
    p.varint_field(kQueryTimeSec, m.query_time->sec);
    p.fixed32_field(kQueryTimeNsec, m.query_time->nsec);
  }
  if (!m.query_message.empty()) p.bytes_field(kQueryMessage, m.query_message);
  if (!m.query_zone.empty()) p.bytes_field(kQueryZone, m.query_zone);
  if (m.response_time) {
    p.varint_field(kResponseTimeSec, m.response_time->sec);
    p.fixed32_field(kResponseTimeNsec, m.response_time->nsec);
  }
  if (!m.response_message.empty()) p.bytes_field(kResponseMessage, m.response_message);
  p.varint_field(kDnstapType, kDnstapTypeMessage);
}

void pack(const Message& m, std::size_t body, uint8_t* out) noexcept {
  Packer p(out);
  if (!m.identity.empty()) p.bytes_field(kIdentity, m.identity);
  if (!m.version.empty()) p.bytes_field(kVersion, m.version);
  pack_rest(m, body, p);
}

}  // namespace

std::vector<uint8_t> encode_prefix(std::span<const uint8_t> identity,
                                   std::span<const uint8_t> version) {
  std::size_t n = 0;
  if (!identity.empty()) n += bytes_field_size(identity.size());
  if (!version.empty()) n += bytes_field_size(version.size());
  std::vector<uint8_t> out(n);
  Packer p(out.data());
  if (!identity.empty()) p.bytes_field(kIdentity, identity);
  if (!version.empty()) p.bytes_field(kVersion, version);
  return out;
}

EncodedSize measure_prefixed(const Message& m, std::size_t prefix_size) noexcept {
  const std::size_t body = message_body_size(m);
  return {body, prefix_size + bytes_field_size(body) + varint_field_size(kDnstapTypeMessage)};
}

void encode_prefixed(const Message& m, const EncodedSize& size, std::span<const uint8_t> prefix,
                     uint8_t* out) noexcept {
  if (!prefix.empty()) std::memcpy(out, prefix.data(), prefix.size());
  Packer p(out + prefix.size());
  pack_rest(m, size.body, p);
}

EncodedSize measure(const Message& m) noexcept {
  const std::size_t body = message_body_size(m);
  return {body, frame_size(m, body)};
}

void encode_measured(const Message& m, const EncodedSize& size, uint8_t* out) noexcept {
  pack(m, size.body, out);
}

std::size_t encoded_size(const Message& m) noexcept {
  return frame_size(m, message_body_size(m));
}

std::size_t encode(const Message& m, std::span<uint8_t> out) noexcept {
  const std::size_t body = message_body_size(m);
  const std::size_t n = frame_size(m, body);
  if (out.size() < n) return 0;
  pack(m, body, out.data());
  return n;
}

void encode(const Message& m, std::vector<uint8_t>& out) {
  const std::size_t body = message_body_size(m);
  const std::size_t n = frame_size(m, body);
  out.resize(n);
  pack(m, body, out.data());
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
      f.value =
          uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
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

DecodeStatus Decoder::decode(std::span<const uint8_t> frame, Message& out) noexcept {
  return dnstap::decode(frame, out);
}

}  // namespace hg::dnstap
