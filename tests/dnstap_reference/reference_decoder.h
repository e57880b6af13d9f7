// The dnstap decoder built on protobuf-c's generated unpacker: the reference that the
// in-place dnstap::decode() (dnstap/codec.h) is held to. The unit tests and the dnstap fuzz target
// run both on the same frames and require identical results; nothing on the read path uses it.
//
// protobuf-c copies every bytes field into memory of its own, which this class owns: the
// Message filled by decode() points into it and stays valid until the next decode() or the
// decoder's destruction (unlike decode()'s, it does not point into the frame).
#pragma once

#include <memory>
#include <span>

#include "dnstap/codec.h"

namespace hg::dnstap {

class ReferenceDecoder {
 public:
  ReferenceDecoder();
  ~ReferenceDecoder();
  ReferenceDecoder(const ReferenceDecoder&) = delete;
  ReferenceDecoder& operator=(const ReferenceDecoder&) = delete;

  /// Same contract as dnstap::decode(), except where the spans of `out` point.
  DecodeStatus decode(std::span<const uint8_t> frame, Message& out) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hg::dnstap
