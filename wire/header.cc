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

}  // namespace hg::wire
