#include "dnstap/codec.h"

#include <cstdlib>
#include <cstring>

#include "dnstap/dnstap.pb-c.h"

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
enum : uint32_t { kIdentity = 1, kVersion = 2, kMessage = 14, kDnstapType = 15 };
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

void pack(const Message& m, std::size_t body, uint8_t* out) noexcept {
  Packer p(out);
  if (!m.identity.empty()) p.bytes_field(kIdentity, m.identity);
  if (!m.version.empty()) p.bytes_field(kVersion, m.version);
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

}  // namespace

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
// protobuf-c does the parsing (bounds-checked, required fields enforced). Its allocations go
// to a bump arena that is reset at the next frame, so a long trace is decoded without a heap
// allocation per message once the arena has grown to the largest frame.

struct Decoder::Impl {
  // Arena: one block reused across frames; allocations that do not fit go to the heap and
  // are released at the next reset.
  std::unique_ptr<std::max_align_t[]> block;
  std::size_t block_bytes = 0;
  std::size_t used = 0;
  std::vector<void*> spill;
  ProtobufCAllocator allocator{};
  Dnstap__Dnstap* decoded = nullptr;

  Impl() {
    allocator.alloc = &Impl::alloc;
    allocator.free = &Impl::release;
    allocator.allocator_data = this;
  }
  ~Impl() { reset(0); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void reset(std::size_t want) {
    for (void* p : spill)
      std::free(p);  // NOLINT(cppcoreguidelines-no-malloc)
    spill.clear();
    used = 0;
    decoded = nullptr;
    if (want > block_bytes) {
      const std::size_t units = (want + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
      block = std::make_unique<std::max_align_t[]>(units);
      block_bytes = units * sizeof(std::max_align_t);
    }
  }

  static void* alloc(void* data, size_t size) {
    auto* self = static_cast<Impl*>(data);
    constexpr std::size_t kAlign = alignof(std::max_align_t);
    const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
    if (rounded != 0 && rounded <= self->block_bytes - self->used) {
      void* p = reinterpret_cast<unsigned char*>(self->block.get()) + self->used;
      self->used += rounded;
      return p;
    }
    void* p = std::malloc(size == 0 ? 1 : size);  // NOLINT(cppcoreguidelines-no-malloc)
    if (p == nullptr) return nullptr;
    self->spill.push_back(p);
    return p;
  }
  static void release(void*, void*) {}  // everything goes at the next reset
};

Decoder::Decoder() : impl_(std::make_unique<Impl>()) {}
Decoder::~Decoder() = default;

namespace {

std::span<const uint8_t> span_of(protobuf_c_boolean has, const ProtobufCBinaryData& b) noexcept {
  if (!has || b.data == nullptr) return {};
  return {b.data, b.len};
}

// protobuf-c stores any varint it finds into a C enum field, including values the enum does
// not list; loading such a value as the enum type is undefined behaviour in C++. So enum
// fields are read as the int they are stored as.
template <class CEnum>
int64_t raw_enum(const CEnum& field) noexcept {
  static_assert(sizeof(CEnum) == sizeof(int));
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

template <class E, class CEnum>
std::optional<E> small_enum(protobuf_c_boolean has, const CEnum& field) noexcept {
  const int64_t raw = raw_enum(field);
  if (!has || raw < 1 || raw > 255) return std::nullopt;
  return static_cast<E>(raw);
}

std::optional<Timestamp> time_of(protobuf_c_boolean has_sec, uint64_t sec,
                                 protobuf_c_boolean has_nsec, uint32_t nsec) noexcept {
  if (!has_sec) return std::nullopt;
  return Timestamp{sec, has_nsec ? nsec : 0};
}

}  // namespace

DecodeStatus Decoder::decode(std::span<const uint8_t> frame, Message& out) noexcept {
  out = Message{};
  // protobuf-c allocates the two structs plus copies of the bytes fields, each no larger
  // than the frame; the slack covers the structs and alignment.
  impl_->reset(frame.size() + 1024);
  Dnstap__Dnstap* d = dnstap__dnstap__unpack(&impl_->allocator, frame.size(), frame.data());
  if (d == nullptr) return DecodeStatus::Malformed;
  impl_->decoded = d;
  if (raw_enum(d->type) != DNSTAP__DNSTAP__TYPE__MESSAGE || d->message == nullptr) {
    return DecodeStatus::NotMessage;
  }
  const Dnstap__Message& m = *d->message;
  const int64_t type = raw_enum(m.type);
  if (type < 1 || type > 255) return DecodeStatus::Malformed;
  out.type = static_cast<MessageType>(type);
  out.family = small_enum<Family>(m.has_socket_family, m.socket_family);
  out.protocol = small_enum<Protocol>(m.has_socket_protocol, m.socket_protocol);
  out.query_address = span_of(m.has_query_address, m.query_address);
  out.response_address = span_of(m.has_response_address, m.response_address);
  if (m.has_query_port) out.query_port = m.query_port;
  if (m.has_response_port) out.response_port = m.response_port;
  out.query_time =
      time_of(m.has_query_time_sec, m.query_time_sec, m.has_query_time_nsec, m.query_time_nsec);
  out.response_time = time_of(m.has_response_time_sec, m.response_time_sec,
                              m.has_response_time_nsec, m.response_time_nsec);
  out.query_message = span_of(m.has_query_message, m.query_message);
  out.response_message = span_of(m.has_response_message, m.response_message);
  out.query_zone = span_of(m.has_query_zone, m.query_zone);
  out.identity = span_of(d->has_identity, d->identity);
  out.version = span_of(d->has_version, d->version);
  return DecodeStatus::Ok;
}

}  // namespace hg::dnstap
