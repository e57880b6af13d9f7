// The protobuf-c decoder, kept as the reference for the in-place one (see the header).
#include "tests/dnstap_reference/reference_decoder.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "dnstap/dnstap.pb-c.h"

namespace hg::dnstap {

// protobuf-c does the parsing (bounds-checked, required fields enforced). Its allocations go
// to a bump arena that is reset at the next frame, so a long trace is decoded without a heap
// allocation per message once the arena has grown to the largest frame.

struct ReferenceDecoder::Impl {
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

ReferenceDecoder::ReferenceDecoder() : impl_(std::make_unique<Impl>()) {}
ReferenceDecoder::~ReferenceDecoder() = default;

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

DecodeStatus ReferenceDecoder::decode(std::span<const uint8_t> frame, Message& out) noexcept {
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
