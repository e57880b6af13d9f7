#include "resolver/fleet/redis_value.h"

#include <algorithm>
#include <array>

#include "base/bytes.h"
#include "base/crc32c.h"
#include "base/decimal.h"
#include "wire/reader.h"

namespace hg::resolver::fleet {

namespace {

constexpr std::array<uint8_t, 4> kMagic{'H', 'G', 'L', '2'};
// magic, version, flags, inserted_ms, qtype, qclass, key flags, qname length
constexpr std::size_t kFixedHead = 4 + 1 + 1 + 8 + 2 + 2 + 1 + 1;

uint8_t key_flags(const cache::CacheKey& key) {
  return static_cast<uint8_t>((key.dnssec_ok ? 1 : 0) | (key.checking_disabled ? 2 : 0));
}

std::string key_with(std::string_view prefix, char kind, const cache::CacheKey& key) {
  std::string s(prefix);
  s += kind;
  s += ':';
  s += key.qname.lowercased().to_text();
  s += ' ';
  s += std::to_string(static_cast<unsigned>(key.qtype));
  s += ' ';
  s += std::to_string(key.qclass);
  s += ' ';
  s += static_cast<char>('0' + key_flags(key));
  return s;
}

// Backslash-escapes the characters SCAN's glob treats specially.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = s.find(' ', i);
    const std::size_t end = j == std::string_view::npos ? s.size() : j;
    parts.push_back(s.substr(i, end - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return parts;
}

}  // namespace

std::string cache_key(std::string_view prefix, const cache::CacheKey& key) {
  return key_with(prefix, 'c', key);
}
std::string lock_key(std::string_view prefix, const cache::CacheKey& key) {
  return key_with(prefix, 'l', key);
}
std::string done_channel(std::string_view prefix, const cache::CacheKey& key) {
  return key_with(prefix, 'd', key);
}
std::string fleet_channel(std::string_view prefix) {
  return std::string(prefix) + "fleet";
}
std::string ttl_caps_key(std::string_view prefix) {
  return std::string(prefix) + "ttl-caps";
}

std::optional<wire::Name> name_of_cache_key(std::string_view prefix, std::string_view redis_key) {
  const std::string head = std::string(prefix) + "c:";
  if (redis_key.size() <= head.size() || redis_key.substr(0, head.size()) != head)
    return std::nullopt;
  std::string_view rest = redis_key.substr(head.size());
  const std::size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  auto name = wire::Name::from_text(rest.substr(0, sp));
  if (!name) return std::nullopt;
  return *name;
}

std::string scan_pattern(std::string_view prefix, const wire::Name* name, bool zone) {
  std::string p = glob_escape(prefix) + "c:";
  if (name == nullptr) return p + "*";
  const std::string text = glob_escape(name->lowercased().to_text());
  if (!zone) return p + text + " *";
  if (name->is_root()) return p + "*";
  return p + "*" + text + " *";
}

std::vector<uint8_t> encode_value(const cache::CacheKey& key, int64_t inserted_ms,
                                  std::span<const uint8_t> message, bool authenticated) {
  std::vector<uint8_t> out;
  if (message.size() > 0xFFFF) return out;
  const wire::Name qname = key.qname.lowercased();
  const auto name = qname.wire();
  out.reserve(kFixedHead + name.size() + 2 + message.size() + 4 + kValueTagSize);
  out.insert(out.end(), kMagic.begin(), kMagic.end());
  out.push_back(kValueVersion);
  out.push_back(authenticated ? kValueAuthenticated : 0);
  base::append_u64(out, static_cast<uint64_t>(inserted_ms));
  base::append_u16(out, static_cast<uint16_t>(key.qtype));
  base::append_u16(out, key.qclass);
  out.push_back(key_flags(key));
  out.push_back(static_cast<uint8_t>(name.size()));
  out.insert(out.end(), name.begin(), name.end());
  base::append_u16(out, static_cast<uint16_t>(message.size()));
  out.insert(out.end(), message.begin(), message.end());
  base::append_u32(out, base::crc32c(out));
  if (authenticated) out.resize(out.size() + kValueTagSize, 0);
  return out;
}

const char* to_string(ValueStatus s) noexcept {
  switch (s) {
    case ValueStatus::Ok:
      return "ok";
    case ValueStatus::Foreign:
      return "foreign";
    case ValueStatus::BadVersion:
      return "bad version";
    case ValueStatus::Corrupt:
      return "corrupt";
    case ValueStatus::KeyMismatch:
      return "key mismatch";
    case ValueStatus::BadMessage:
      return "bad message";
  }
  return "?";
}

DecodedValue decode_value(std::span<const uint8_t> v, const cache::CacheKey& key,
                          wire::Message& parsed) {
  DecodedValue d;
  wire::WireReader r(v);
  const auto magic = r.bytes(kMagic.size());
  if (!magic || !std::equal(kMagic.begin(), kMagic.end(), magic->begin())) {
    d.status = ValueStatus::Foreign;
    return d;
  }
  if (v.size() < kFixedHead) return d;  // Corrupt
  // The fixed head (kFixedHead bytes, all there).
  const auto version = r.u8();
  const auto flags = r.u8();
  const auto inserted_ms = r.u64();
  const auto qtype = r.u16();
  const auto qclass = r.u16();
  const auto kflags = r.u8();
  const auto name_len = r.u8();
  if (!version || !flags || !inserted_ms || !qtype || !qclass || !kflags || !name_len) return d;
  if (*version != kValueVersion) {
    d.status = ValueStatus::BadVersion;
    return d;
  }
  const auto name = r.bytes(*name_len);
  const auto msg_len = r.u16();
  if (!name || !msg_len) return d;
  if ((*flags & ~kValueAuthenticated) != 0) return d;  // no other flags defined in version 1
  const bool authenticated = (*flags & kValueAuthenticated) != 0;
  const auto message = r.bytes(*msg_len);
  const std::size_t crc_at = r.offset();
  const auto crc = r.u32();
  if (!message || !crc || r.remaining() != (authenticated ? kValueTagSize : 0)) return d;
  if (base::crc32c(v.first(crc_at)) != *crc) return d;
  d.authenticated = authenticated;

  d.inserted_ms = static_cast<int64_t>(*inserted_ms);
  const wire::Name want = key.qname.lowercased();
  if (*qtype != static_cast<uint16_t>(key.qtype) || *qclass != key.qclass ||
      *kflags != key_flags(key) ||
      !std::equal(name->begin(), name->end(), want.wire().begin(), want.wire().end())) {
    d.status = ValueStatus::KeyMismatch;
    return d;
  }
  d.message = *message;
  if (!parsed.parse(d.message, wire::ParseMode::Strict) || !parsed.header().qr() ||
      parsed.questions().size() != 1) {
    d.status = ValueStatus::BadMessage;
    return d;
  }
  const wire::Question& q = parsed.questions()[0];
  if (q.type != key.qtype || q.klass != key.qclass || !(q.name == key.qname)) {
    d.status = ValueStatus::BadMessage;
    return d;
  }
  d.status = ValueStatus::Ok;
  return d;
}

int64_t value_age_ms(int64_t inserted_ms, int64_t now_ms, int64_t cap) noexcept {
  if (inserted_ms >= now_ms) return 0;
  // Both are wall-clock milliseconds; a hostile inserted_ms near INT64_MIN must not overflow.
  if (now_ms - cap > inserted_ms) return cap;
  return now_ms - inserted_ms;
}

std::string encode_fleet_message(const FleetMessage& m) {
  std::string s = "v1 " + m.sender + " ";
  const std::string name = m.name.lowercased().to_text();
  switch (m.op) {
    case FleetOp::FlushAll:
      return s + "flush-all";
    case FleetOp::FlushName:
      return s + "flush " + name;
    case FleetOp::FlushZone:
      return s + "flush-zone " + name;
    case FleetOp::TtlCap:
      return s + "ttl-cap " + name + " " + std::to_string(m.seconds);
    case FleetOp::TtlCapClear:
      return s + "ttl-cap-clear " + name;
  }
  return s;
}

std::optional<FleetMessage> decode_fleet_message(std::string_view text) {
  if (text.size() > 2048) return std::nullopt;
  const auto parts = split_spaces(text);
  if (parts.size() < 3 || parts[0] != "v1" || parts[1].empty() || parts[1].size() > 64)
    return std::nullopt;
  FleetMessage m;
  m.sender = std::string(parts[1]);
  const std::string_view op = parts[2];
  auto name_at = [&](std::size_t i) -> std::optional<wire::Name> {
    auto n = wire::Name::from_text(parts[i]);
    if (!n) return std::nullopt;
    return n->lowercased();
  };
  if (op == "flush-all" && parts.size() == 3) {
    m.op = FleetOp::FlushAll;
    return m;
  }
  std::optional<wire::Name> name;
  if (parts.size() >= 4) name = name_at(3);
  if (!name) return std::nullopt;
  m.name = *name;
  if (op == "flush" && parts.size() == 4) {
    m.op = FleetOp::FlushName;
    return m;
  }
  if (op == "flush-zone" && parts.size() == 4) {
    m.op = FleetOp::FlushZone;
    return m;
  }
  if (op == "ttl-cap-clear" && parts.size() == 4) {
    m.op = FleetOp::TtlCapClear;
    return m;
  }
  if (op == "ttl-cap" && parts.size() == 5) {
    auto secs = base::parse_decimal<uint32_t>(parts[4]);
    if (!secs || *secs > 2147483647u) return std::nullopt;
    m.op = FleetOp::TtlCap;
    m.seconds = *secs;
    return m;
  }
  return std::nullopt;
}

}  // namespace hg::resolver::fleet
