// FrameWriter: writes a Frame Streams file (START with a content type, data frames, STOP)
// through a large stdio buffer — what the trace generator and the tests write dnstap with.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace hg::rehearse {

class FrameWriter {
 public:
  FrameWriter() = default;
  ~FrameWriter() { close(); }
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  /// Creates `path` and writes the START frame. False with errno set on failure.
  bool open(const std::string& path, std::string_view content_type = "protobuf:dnstap.Dnstap");
  /// One data frame (a non-empty payload).
  bool write(std::span<const uint8_t> payload);
  /// Writes the STOP frame and closes; true when every write succeeded.
  bool close();
  bool is_open() const { return f_ != nullptr; }

 private:
  bool put32(uint32_t v);
  std::FILE* f_ = nullptr;
  bool ok_ = true;
};

}  // namespace hg::rehearse
