// Protobuf wire format (varint, fixed32/64, length-delimited) read with bounds checks.
#include "tools/rehearse/dnstap_decode.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kNs = 1'000'000'000;

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }
  bool fixed32(uint32_t& v) {
    if (end - p < 4) return false;
    v = uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
    p += 4;
    return true;
  }
  bool bytes(std::span<const uint8_t>& s) {
    uint64_t n;
    if (!varint(n) || n > static_cast<uint64_t>(end - p)) return false;
    s = {p, static_cast<std::size_t>(n)};
    p += n;
    return true;
  }
  /// Skips a field of wire type wt; false on a malformed or group field.
  bool skip(uint32_t wt) {
    uint64_t v;
    std::span<const uint8_t> s;
    switch (wt) {
      case 0:
        return varint(v);
      case 1:
        if (end - p < 8) return false;
        p += 8;
        return true;
      case 2:
        return bytes(s);
      case 5:
        if (end - p < 4) return false;
        p += 4;
        return true;
      default:
        return false;
    }
  }
};

std::string_view decode_message(std::span<const uint8_t> in, DnstapView& out) {
  Cursor c{in.data(), in.data() + in.size()};
  bool has_type = false;
  uint64_t qsec = 0, rsec = 0;
  uint32_t qnsec = 0, rnsec = 0;
  bool has_qsec = false, has_rsec = false;
  while (c.p != c.end) {
    uint64_t key;
    if (!c.varint(key)) return "Message: bad field key";
    const uint64_t field = key >> 3;
    const auto wt = static_cast<uint32_t>(key & 7);
    uint64_t v = 0;
    auto want = [&](uint32_t w) { return wt == w; };
    switch (field) {
      case 1:
      case 2:
      case 3:
      case 6:
      case 7:
      case 8:
      case 12:
        if (!want(0) || !c.varint(v)) return "Message: bad varint field";
        if (field == 1) {
          out.type = static_cast<uint32_t>(v);
          has_type = true;
        }
        if (field == 2) out.socket_family = static_cast<uint32_t>(v);
        if (field == 3) out.socket_protocol = static_cast<uint32_t>(v);
        if (field == 6) out.query_port = static_cast<uint32_t>(v);
        if (field == 7) out.response_port = static_cast<uint32_t>(v);
        if (field == 8) qsec = v, has_qsec = true;
        if (field == 12) rsec = v, has_rsec = true;
        break;
      case 9:
      case 13: {
        uint32_t n;
        if (!want(5) || !c.fixed32(n)) return "Message: bad fixed32 field";
        (field == 9 ? qnsec : rnsec) = n;
        break;
      }
      case 4:
      case 5:
      case 10:
      case 11:
      case 14: {
        std::span<const uint8_t> s;
        if (!want(2) || !c.bytes(s)) return "Message: bad bytes field";
        if (field == 4) out.query_address = s;
        if (field == 5) out.response_address = s;
        if (field == 10) out.query_message = s;
        if (field == 14) out.response_message = s;
        break;
      }
      default:
        if (field == 0 || !c.skip(wt)) return "Message: bad unknown field";
    }
  }
  if (!has_type) return "Message without its type";
  if (out.query_address.size() != 0 && out.query_address.size() != 4 &&
      out.query_address.size() != 16)
    return "query_address is neither 4 nor 16 bytes";
  // Seconds beyond year ~2262 would overflow int64 nanoseconds.
  constexpr uint64_t kMaxSec = 9'000'000'000ULL;
  if ((has_qsec && qsec > kMaxSec) || (has_rsec && rsec > kMaxSec)) return "time out of range";
  if (qnsec >= kNs || rnsec >= kNs) return "nanoseconds out of range";
  out.has_query_time = has_qsec;
  out.has_response_time = has_rsec;
  if (has_qsec) out.query_time_ns = static_cast<int64_t>(qsec) * kNs + qnsec;
  if (has_rsec) out.response_time_ns = static_cast<int64_t>(rsec) * kNs + rnsec;
  return {};
}

void put_varint(std::vector<uint8_t>& o, uint64_t v) {
  while (v >= 0x80) {
    o.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  o.push_back(static_cast<uint8_t>(v));
}
void put_key(std::vector<uint8_t>& o, uint32_t field, uint32_t wt) {
  put_varint(o, field << 3 | wt);
}
void put_bytes(std::vector<uint8_t>& o, uint32_t field, std::span<const uint8_t> s) {
  put_key(o, field, 2);
  put_varint(o, s.size());
  o.insert(o.end(), s.begin(), s.end());
}
void put_fixed32(std::vector<uint8_t>& o, uint32_t field, uint32_t v) {
  put_key(o, field, 5);
  for (int i = 0; i < 4; ++i)
    o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

std::string_view decode_dnstap(std::span<const uint8_t> payload, DnstapView& out) {
  out = DnstapView{};
  Cursor c{payload.data(), payload.data() + payload.size()};
  std::span<const uint8_t> message;
  bool has_message = false;
  while (c.p != c.end) {
    uint64_t key;
    if (!c.varint(key)) return "bad field key";
    const uint64_t field = key >> 3;
    const auto wt = static_cast<uint32_t>(key & 7);
    if (field == 14) {
      if (wt != 2 || !c.bytes(message)) return "bad message field";
      has_message = true;
    } else if (field == 15) {
      uint64_t v;
      if (wt != 0 || !c.varint(v)) return "bad type field";
      if (v != 1) return "Dnstap type is not MESSAGE";
    } else if (field == 1) {
      if (wt != 2 || !c.bytes(out.identity)) return "bad identity field";
    } else if (field == 0 || !c.skip(wt)) {
      return "bad field";
    }
  }
  if (!has_message) return "no Message";
  return decode_message(message, out);
}

void encode_dnstap(const DnstapView& m, std::vector<uint8_t>& out) {
  // The Message is built after a gap for its length prefix, then moved into place: one pass.
  if (!m.identity.empty()) put_bytes(out, 1, m.identity);
  put_key(out, 15, 0);
  put_varint(out, 1);
  put_key(out, 14, 2);
  const std::size_t body = out.size();
  put_key(out, 1, 0);
  put_varint(out, m.type);
  if (m.socket_family != 0) put_key(out, 2, 0), put_varint(out, m.socket_family);
  if (m.socket_protocol != 0) put_key(out, 3, 0), put_varint(out, m.socket_protocol);
  if (!m.query_address.empty()) put_bytes(out, 4, m.query_address);
  if (!m.response_address.empty()) put_bytes(out, 5, m.response_address);
  if (m.query_port != 0) put_key(out, 6, 0), put_varint(out, m.query_port);
  if (m.response_port != 0) put_key(out, 7, 0), put_varint(out, m.response_port);
  if (m.has_query_time) {
    put_key(out, 8, 0);
    put_varint(out, static_cast<uint64_t>(m.query_time_ns / kNs));
    put_fixed32(out, 9, static_cast<uint32_t>(m.query_time_ns % kNs));
  }
  if (!m.query_message.empty()) put_bytes(out, 10, m.query_message);
  if (m.has_response_time) {
    put_key(out, 12, 0);
    put_varint(out, static_cast<uint64_t>(m.response_time_ns / kNs));
    put_fixed32(out, 13, static_cast<uint32_t>(m.response_time_ns % kNs));
  }
  if (!m.response_message.empty()) put_bytes(out, 14, m.response_message);
  // Insert the Message length after its key.
  const std::size_t len = out.size() - body;
  uint8_t tmp[10];
  std::size_t n = 0;
  for (uint64_t v = len;; v >>= 7) {
    tmp[n++] = static_cast<uint8_t>(v >= 0x80 ? (v | 0x80) : v);
    if (v < 0x80) break;
  }
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(body), tmp, tmp + n);
}

}  // namespace hg::rehearse
