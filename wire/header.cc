#include "wire/header.h"

namespace hg::wire {

Result<Header> Header::read(WireReader& r) noexcept {
  if (r.remaining() < kHeaderSize) return Error{ParseError::ShortHeader, r.data().size()};
  auto b = r.bytes(kHeaderSize).value();
  Header h;
  h.id = load_u16_unchecked(&b[0]);
  h.flags = load_u16_unchecked(&b[2]);
  h.qdcount = load_u16_unchecked(&b[4]);
  h.ancount = load_u16_unchecked(&b[6]);
  h.nscount = load_u16_unchecked(&b[8]);
  h.arcount = load_u16_unchecked(&b[10]);
  return h;
}

void Header::write_unchecked(uint8_t* p) const noexcept {
  store_u16_unchecked(p, id);
  store_u16_unchecked(p + 2, flags);
  store_u16_unchecked(p + 4, qdcount);
  store_u16_unchecked(p + 6, ancount);
  store_u16_unchecked(p + 8, nscount);
  store_u16_unchecked(p + 10, arcount);
}

}  // namespace hg::wire
