// PacketBuilder: builds DNS messages byte by byte for wire/ tests, including hostile ones.
//
// Counts are computed from what was added unless forced with counts(); names are written
// uncompressed from text, and raw() appends any bytes (pointers, junk) where a test needs
// them. Independent of wire/'s writer on purpose: the tests must not trust the code under test
// to build their inputs.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hg::wire::test {

using Bytes = std::vector<uint8_t>;

/// Uncompressed wire form of a dotted name ("www.example.com", "." for the root). No escapes.
inline Bytes wire_name(std::string_view text) {
  Bytes out;
  if (text == ".") return Bytes{0};
  std::size_t start = 0;
  while (start < text.size()) {
    auto dot = text.find('.', start);
    if (dot == std::string_view::npos) dot = text.size();
    out.push_back(static_cast<uint8_t>(dot - start));
    for (std::size_t i = start; i < dot; ++i)
      out.push_back(static_cast<uint8_t>(text[i]));
    start = dot + 1;
  }
  out.push_back(0);
  return out;
}

/// A name of `labels` labels of `len` octets each (letters), e.g. for length limits.
inline std::string long_name(std::initializer_list<int> label_lengths) {
  std::string s;
  char c = 'a';
  for (int len : label_lengths) {
    if (!s.empty()) s.push_back('.');
    s.append(static_cast<std::size_t>(len), c);
    c = c == 'z' ? 'a' : static_cast<char>(c + 1);
  }
  return s;
}

class PacketBuilder {
 public:
  PacketBuilder& id(uint16_t v) {
    id_ = v;
    return *this;
  }
  PacketBuilder& flags(uint16_t v) {
    flags_ = v;
    return *this;
  }
  /// Forces the header counts instead of counting what was added.
  PacketBuilder& counts(uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar) {
    forced_ = {qd, an, ns, ar};
    return *this;
  }
  PacketBuilder& question(std::string_view name, uint16_t type, uint16_t klass = 1) {
    append(wire_name(name));
    u16(type);
    u16(klass);
    ++counts_[0];
    return *this;
  }
  /// A record with an owner given as text. `section` 0=answer, 1=authority, 2=additional.
  PacketBuilder& rr(int section, std::string_view owner, uint16_t type, uint32_t ttl,
                    const Bytes& rdata, uint16_t klass = 1) {
    return rr_raw_owner(section, wire_name(owner), type, ttl, rdata, klass);
  }
  /// A record whose owner is given as raw bytes (e.g. a compression pointer).
  PacketBuilder& rr_raw_owner(int section, const Bytes& owner, uint16_t type, uint32_t ttl,
                              const Bytes& rdata, uint16_t klass = 1) {
    append(owner);
    u16(type);
    u16(klass);
    u32(ttl);
    u16(static_cast<uint16_t>(rdata.size()));
    append(rdata);
    ++counts_[section + 1];  // counts_[0] is QDCOUNT
    return *this;
  }
  /// An OPT record in the additional section: payload size, TTL field, options bytes.
  PacketBuilder& opt(uint16_t udp = 1232, uint32_t ttl_field = 0x8000, const Bytes& options = {},
                     int section = 2, std::string_view owner = ".") {
    return rr(section, owner, 41, ttl_field, options, udp);
  }
  /// Raw bytes appended as they are (not counted).
  PacketBuilder& raw(const Bytes& b) {
    append(b);
    return *this;
  }
  std::size_t size() const { return 12 + body_.size(); }

  Bytes build() const {
    Bytes out;
    const uint16_t c[4] = {
        forced_ ? (*forced_)[0] : counts_[0], forced_ ? (*forced_)[1] : counts_[1],
        forced_ ? (*forced_)[2] : counts_[2], forced_ ? (*forced_)[3] : counts_[3]};
    for (uint16_t v : {id_, flags_, c[0], c[1], c[2], c[3]}) {
      out.push_back(static_cast<uint8_t>(v >> 8));
      out.push_back(static_cast<uint8_t>(v));
    }
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  void append(const Bytes& b) { body_.insert(body_.end(), b.begin(), b.end()); }
  void u16(uint16_t v) {
    body_.push_back(static_cast<uint8_t>(v >> 8));
    body_.push_back(static_cast<uint8_t>(v));
  }
  void u32(uint32_t v) {
    u16(static_cast<uint16_t>(v >> 16));
    u16(static_cast<uint16_t>(v));
  }

  uint16_t id_ = 0x1234;
  uint16_t flags_ = 0x8180;  // qr rd ra, NOERROR
  uint16_t counts_[4] = {0, 0, 0, 0};
  std::optional<std::array<uint16_t, 4>> forced_;
  Bytes body_;
};

/// Big-endian helpers for RDATA.
inline Bytes be16(uint16_t v) {
  return {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}
inline Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// Writes a hostile test packet into the fuzz seed corpus when HG_WRITE_CORPUS names a folder
/// (docs/architecture.md §7: every ParseError's packet also seeds tests/fuzz/corpus/). A no-op
/// otherwise.
inline void save_to_corpus(const std::string& name, const Bytes& packet) {
  const char* dir = std::getenv("HG_WRITE_CORPUS");
  if (dir == nullptr) return;
  std::ofstream out(std::string(dir) + "/malformed-" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(packet.data()),
            static_cast<std::streamsize>(packet.size()));
}

}  // namespace hg::wire::test
