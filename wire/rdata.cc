#include "wire/rdata.h"

#include <cstring>

#include "base/bytes.h"

namespace hg::wire {

namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";

// Reads a name that must lie within the RDATA reader; running off the RDATA's end is a
// length disagreement, not a truncated packet (same rule as Message::parse).
Result<Name> rdata_name(WireReader& rd, std::size_t rdata_offset) {
  auto n = read_name(rd);
  if (!n && n.error().code == ParseError::Truncated)
    return Error{ParseError::RdataLength, rdata_offset};
  return n;
}

std::vector<uint8_t> to_vector(std::span<const uint8_t> s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

void append_u(std::string& s, unsigned long v) {
  s += std::to_string(v);
}

}  // namespace

bool rdata_names_compressible(RRType type) noexcept {
  switch (type) {
    case RRType::NS:
    case RRType::CNAME:
    case RRType::PTR:
    case RRType::MX:
    case RRType::SOA:
      return true;
    default:
      return false;
  }
}

bool rdata_has_names(RRType type) noexcept {
  switch (type) {
    case RRType::NS:
    case RRType::CNAME:
    case RRType::PTR:
    case RRType::DNAME:
    case RRType::MX:
    case RRType::SRV:
    case RRType::SOA:
      return true;
    default:
      return false;
  }
}

Result<Rdata> read_rdata(std::span<const uint8_t> packet, RRType type, std::size_t rdata_offset,
                         std::size_t rdlength) {
  WireReader whole(packet, rdata_offset);
  if (whole.offset() != rdata_offset) return Error{ParseError::Truncated, packet.size()};
  auto sub = whole.sub(rdlength);
  if (!sub) return sub.error();
  WireReader rd = *sub;
  const auto bad_length = Error{ParseError::RdataLength, rdata_offset};
  auto finish = [&](Rdata v) -> Result<Rdata> {
    if (!rd.at_end()) return bad_length;
    return v;
  };
  switch (type) {
    case RRType::A: {
      if (rdlength != 4) return bad_length;
      RdataA a;
      std::memcpy(a.address.data(), rd.bytes(4).value().data(), 4);
      return Rdata{a};
    }
    case RRType::AAAA: {
      if (rdlength != 16) return bad_length;
      RdataAAAA a;
      std::memcpy(a.address.data(), rd.bytes(16).value().data(), 16);
      return Rdata{a};
    }
    case RRType::NS:
    case RRType::CNAME:
    case RRType::PTR:
    case RRType::DNAME: {
      auto n = rdata_name(rd, rdata_offset);
      if (!n) return n.error();
      return finish(RdataName{*n});
    }
    case RRType::MX: {
      auto pref = rd.u16();
      if (!pref) return bad_length;
      auto n = rdata_name(rd, rdata_offset);
      if (!n) return n.error();
      return finish(RdataMX{*pref, *n});
    }
    case RRType::SRV: {
      RdataSRV s;
      auto p = rd.u16();
      auto w = rd.u16();
      auto port = rd.u16();
      if (!p || !w || !port) return bad_length;
      s.priority = *p;
      s.weight = *w;
      s.port = *port;
      auto n = rdata_name(rd, rdata_offset);
      if (!n) return n.error();
      s.target = *n;
      return finish(Rdata{s});
    }
    case RRType::SOA: {
      RdataSOA s;
      auto m = rdata_name(rd, rdata_offset);
      if (!m) return m.error();
      auto r = rdata_name(rd, rdata_offset);
      if (!r) return r.error();
      s.mname = *m;
      s.rname = *r;
      if (rd.remaining() != 20) return bad_length;
      s.serial = rd.u32().value();
      s.refresh = rd.u32().value();
      s.retry = rd.u32().value();
      s.expire = rd.u32().value();
      s.minimum = rd.u32().value();
      return Rdata{s};
    }
    case RRType::TXT: {
      if (rdlength == 0) return bad_length;  // at least one string (RFC 1035 §3.3.14)
      RdataTXT t;
      while (!rd.at_end()) {
        auto l = rd.u8().value();
        auto b = rd.bytes(l);
        if (!b) return bad_length;
        t.strings.push_back(to_vector(*b));
      }
      return Rdata{std::move(t)};
    }
    case RRType::CAA: {
      RdataCAA c;
      auto f = rd.u8();
      auto tl = rd.u8();
      if (!f || !tl || *tl == 0) return bad_length;
      auto tag = rd.bytes(*tl);
      if (!tag) return bad_length;
      c.flags = *f;
      c.tag = to_vector(*tag);
      c.value = to_vector(rd.bytes(rd.remaining()).value());
      return Rdata{std::move(c)};
    }
    default:
      return Rdata{RdataOpaque{to_vector(rd.bytes(rdlength).value())}};
  }
}

Result<Rdata> read_rdata(const Message& m, const RecordView& rr) {
  return read_rdata(m.packet(), rr.type, rr.rdata_offset, rr.rdlength);
}

bool write_rdata(WireWriter& w, RRType type, const Rdata& rdata) {
  const bool compress = rdata_names_compressible(type);
  struct Visitor {
    WireWriter& w;
    bool compress;
    bool operator()(const RdataA& a) { return w.bytes(a.address); }
    bool operator()(const RdataAAAA& a) { return w.bytes(a.address); }
    bool operator()(const RdataName& n) { return w.name(n.name, compress); }
    bool operator()(const RdataMX& m) {
      return w.u16(m.preference) && w.name(m.exchange, compress);
    }
    bool operator()(const RdataTXT& t) {
      for (const auto& s : t.strings) {
        if (s.size() > 255) return false;
        if (!w.u8(static_cast<uint8_t>(s.size())) || !w.bytes(s)) return false;
      }
      return true;
    }
    bool operator()(const RdataSRV& s) {
      return w.u16(s.priority) && w.u16(s.weight) && w.u16(s.port) && w.name(s.target, compress);
    }
    bool operator()(const RdataSOA& s) {
      return w.name(s.mname, compress) && w.name(s.rname, compress) && w.u32(s.serial) &&
             w.u32(s.refresh) && w.u32(s.retry) && w.u32(s.expire) && w.u32(s.minimum);
    }
    bool operator()(const RdataCAA& c) {
      if (c.tag.empty() || c.tag.size() > 255) return false;
      return w.u8(c.flags) && w.u8(static_cast<uint8_t>(c.tag.size())) && w.bytes(c.tag) &&
             w.bytes(c.value);
    }
    bool operator()(const RdataOpaque& o) { return w.bytes(o.data); }
  };
  return std::visit(Visitor{w, compress}, rdata);
}

bool write_rdata_with_length(WireWriter& w, RRType type, const Rdata& rdata) {
  const std::size_t start = w.mark();
  if (!w.u16(0) || !write_rdata(w, type, rdata) || w.size() - start - 2 > 0xFFFF) {
    w.rollback(start);
    return false;
  }
  w.patch_u16(start, static_cast<uint16_t>(w.size() - start - 2));
  return true;
}

std::string ipv6_to_text(const std::array<uint8_t, 16>& a) {
  uint16_t words[8];
  for (std::size_t i = 0; i < 8; ++i)
    words[i] = base::load_u16(&a[2 * i]);
  // RFC 5952 §4.2: compress the longest run of two or more zero groups, the first on a tie.
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (words[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && words[j] == 0)
      ++j;
    if (j - i > best_len && j - i >= 2) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  std::string s;
  auto hex_word = [&](uint16_t v) {
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      unsigned nib = (v >> shift) & 0xF;
      if (nib != 0 || started || shift == 0) {
        s.push_back(kHex[nib]);
        started = true;
      }
    }
  };
  // RFC 5952 §5 (and inet_ntop): ::ffff:a.b.c.d and ::a.b.c.d keep the dotted quad.
  const bool embedded_v4 = best == 0 && (best_len == 6 || (best_len == 5 && words[5] == 0xFFFF));
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      s += "::";
      i += best_len - 1;
      continue;
    }
    if (embedded_v4 && i == 6) {
      if (i != best + best_len) s.push_back(':');
      s += std::to_string(a[12]) + "." + std::to_string(a[13]) + "." + std::to_string(a[14]) + "." +
           std::to_string(a[15]);
      break;
    }
    if (i != 0 && !(best >= 0 && i == best + best_len)) s.push_back(':');
    hex_word(words[i]);
  }
  return s;
}

std::string quoted_string(std::span<const uint8_t> str) {
  std::string s;
  s.reserve(str.size() + 2);
  s.push_back('"');
  for (uint8_t c : str) {
    if (c == '"' || c == '\\') {
      s.push_back('\\');
      s.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      s.push_back('\\');
      s.push_back(static_cast<char>('0' + c / 100));
      s.push_back(static_cast<char>('0' + c / 10 % 10));
      s.push_back(static_cast<char>('0' + c % 10));
    } else {
      s.push_back(static_cast<char>(c));
    }
  }
  s.push_back('"');
  return s;
}

std::string rdata_to_text(const Rdata& rdata) {
  struct Visitor {
    std::string operator()(const RdataA& a) {
      return std::to_string(a.address[0]) + "." + std::to_string(a.address[1]) + "." +
             std::to_string(a.address[2]) + "." + std::to_string(a.address[3]);
    }
    std::string operator()(const RdataAAAA& a) { return ipv6_to_text(a.address); }
    std::string operator()(const RdataName& n) { return n.name.to_text(); }
    std::string operator()(const RdataMX& m) {
      return std::to_string(m.preference) + " " + m.exchange.to_text();
    }
    std::string operator()(const RdataTXT& t) {
      std::string s;
      for (const auto& str : t.strings) {
        if (!s.empty()) s.push_back(' ');
        s += quoted_string(str);
      }
      return s;
    }
    std::string operator()(const RdataSRV& v) {
      std::string s;
      append_u(s, v.priority);
      s.push_back(' ');
      append_u(s, v.weight);
      s.push_back(' ');
      append_u(s, v.port);
      s.push_back(' ');
      return s + v.target.to_text();
    }
    std::string operator()(const RdataSOA& v) {
      std::string s = v.mname.to_text() + " " + v.rname.to_text();
      for (uint32_t x : {v.serial, v.refresh, v.retry, v.expire, v.minimum}) {
        s.push_back(' ');
        append_u(s, x);
      }
      return s;
    }
    std::string operator()(const RdataCAA& c) {
      // RFC 8659 §4.1.1: the tag is printed bare (it is alphanumeric when well-formed), the
      // value as a quoted string.
      std::string s = std::to_string(c.flags) + " ";
      for (uint8_t ch : c.tag) {
        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
          s.push_back(static_cast<char>(ch));
        } else {
          s.push_back('\\');
          s.push_back(static_cast<char>('0' + ch / 100));
          s.push_back(static_cast<char>('0' + ch / 10 % 10));
          s.push_back(static_cast<char>('0' + ch % 10));
        }
      }
      return s + " " + quoted_string(c.value);
    }
    std::string operator()(const RdataOpaque& o) {
      // RFC 3597 §5: \# <length> <hex>; an empty RDATA is just "\# 0". Upper-case hex, as
      // dig prints it.
      std::string s = "\\# " + std::to_string(o.data.size());
      if (!o.data.empty()) s.push_back(' ');
      for (uint8_t b : o.data) {
        s.push_back(kHexUpper[b >> 4]);
        s.push_back(kHexUpper[b & 0xF]);
      }
      return s;
    }
  };
  return std::visit(Visitor{}, rdata);
}

}  // namespace hg::wire
