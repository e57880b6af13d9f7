#include "tools/rehearse/trace/frame_writer.h"

#include "base/bytes.h"

namespace hg::rehearse {

bool FrameWriter::put32(uint32_t v) {
  uint8_t b[4];
  base::store_u32(b, v);
  return std::fwrite(b, 1, 4, f_) == 4;
}

bool FrameWriter::open(const std::string& path, std::string_view content_type) {
  close();
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr) return false;
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  ok_ = true;
  // Escape, control length, START, then the CONTENT_TYPE field (type 1, length, bytes).
  const auto ct = static_cast<uint32_t>(content_type.size());
  ok_ = put32(0) && put32(4 + 8 + ct) && put32(2) && put32(1) && put32(ct) &&
        std::fwrite(content_type.data(), 1, ct, f_) == ct;
  return ok_;
}

bool FrameWriter::write(std::span<const uint8_t> payload) {
  if (f_ == nullptr || payload.empty()) return false;
  ok_ = ok_ && put32(static_cast<uint32_t>(payload.size())) &&
        std::fwrite(payload.data(), 1, payload.size(), f_) == payload.size();
  return ok_;
}

bool FrameWriter::close() {
  if (f_ == nullptr) return ok_;
  ok_ = ok_ && put32(0) && put32(4) && put32(3);  // escape, length 4, STOP
  ok_ = (std::fclose(f_) == 0) && ok_;
  f_ = nullptr;
  return ok_;
}

}  // namespace hg::rehearse
