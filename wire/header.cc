#include "wire/header.h"

#include "base/bytes.h"

namespace hg::wire {

Result<Header> Header::read(WireReader& r) noexcept {
  if (r.remaining() < kHeaderSize) return Error{ParseError::ShortHeader, r.data().size()};
  auto b = r.bytes(kHeaderSize).value();
  Header h;
  h.id = base::load_u16(&b[0]);
  h.flags = base::load_u16(&b[2]);
  h.qdcount = base::load_u16(&b[4]);
  h.ancount = base::load_u16(&b[6]);
  h.nscount = base::load_u16(&b[8]);
  h.arcount = base::load_u16(&b[10]);
  return h;
}

void Header::write_unchecked(uint8_t* p) const noexcept {
  base::store_u16(p, id);
  base::store_u16(p + 2, flags);
  base::store_u16(p + 4, qdcount);
  base::store_u16(p + 6, ancount);
  base::store_u16(p + 8, nscount);
  base::store_u16(p + 10, arcount);
}

std::size_t question_end(std::span<const uint8_t> msg) noexcept {
  if (msg.size() < kHeaderSize || base::load_u16(&msg[4]) < 1) return 0;
  std::size_t at = kHeaderSize;
  std::size_t name_len = 0;
  while (true) {
    if (at >= msg.size()) return 0;
    const uint8_t len = msg[at];
    if (len == 0) break;
    if (len > 63) return 0;  // compressed or reserved
    name_len += 1 + len;
    if (name_len > 254) return 0;
    at += 1 + len;
  }
  at += 1;
  return at + 4 <= msg.size() ? at + 4 : 0;
}

}  // namespace hg::wire
