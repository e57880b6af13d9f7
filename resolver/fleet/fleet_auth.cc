#include "resolver/fleet/fleet_auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <algorithm>

#include "base/bytes.h"
#include "base/decimal.h"
#include "resolver/fleet/redis_value.h"

namespace hg::resolver::fleet {

namespace {

static_assert(kTagSize == kValueTagSize);

constexpr std::string_view kSalt = "hourglass fleet key v1";
constexpr std::array<std::string_view, 3> kLabels{
    "hourglass fleet v1 value", "hourglass fleet v1 message", "hourglass fleet v1 ttl-cap"};

// HKDF-SHA256 (RFC 5869) of the secret, one 32-byte key per label.
bool derive(std::span<const uint8_t> secret, std::string_view label, std::span<uint8_t> out) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (kdf == nullptr) return false;
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (ctx == nullptr) return false;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t*>(secret.data()),
                                        secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(kSalt.data()),
                                        kSalt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(label.data()),
                                        label.size()),
      OSSL_PARAM_construct_end()};
  const bool ok = EVP_KDF_derive(ctx, out.data(), out.size(), params) == 1;
  EVP_KDF_CTX_free(ctx);
  return ok;
}

}  // namespace

// --- Hmac ------------------------------------------------------------------------------------

std::unique_ptr<Hmac> Hmac::create(std::span<const uint8_t> key) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) return nullptr;
  std::unique_ptr<Hmac> h(new Hmac());
  h->ctx_ = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  if (h->ctx_ == nullptr) return nullptr;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(h->ctx_, key.data(), key.size(), params) != 1) return nullptr;
  h->key_.assign(key.begin(), key.end());
  return h;
}

Hmac::~Hmac() {
  OPENSSL_cleanse(key_.data(), key_.size());
  EVP_MAC_CTX_free(ctx_);
}

Hmac::Tag Hmac::tag(std::span<const std::span<const uint8_t>> parts) {
  Tag out{};
  // The key is set again for every tag (two SHA-256 blocks), rather than relying on a reset
  // with no key, whose behaviour has varied between OpenSSL 3 releases.
  bool ok = EVP_MAC_init(ctx_, key_.data(), key_.size(), nullptr) == 1;
  for (const auto& p : parts)
    ok = ok && EVP_MAC_update(ctx_, p.data(), p.size()) == 1;
  std::size_t len = 0;
  ok = ok && EVP_MAC_final(ctx_, out.data(), &len, out.size()) == 1 && len == out.size();
  // A tag OpenSSL failed to make: all zeros on both sides would verify; make it one that
  // never does instead.
  if (!ok) {
    out.fill(0);
    out[0] = 1;
    failed_ = true;
  }
  return out;
}

// --- FleetAuth -------------------------------------------------------------------------------

std::unique_ptr<FleetAuth> FleetAuth::create(std::span<const uint8_t> secret, std::string* error) {
  auto fail = [&](std::string why) -> std::unique_ptr<FleetAuth> {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (secret.size() < kMinSecretSize)
    return fail("the key is " + std::to_string(secret.size()) + " bytes; at least " +
                std::to_string(kMinSecretSize) +
                " are needed (e.g. openssl rand -hex 32, which writes 64)");
  auto a = std::unique_ptr<FleetAuth>(new FleetAuth());
  for (std::size_t i = 0; i < kLabels.size(); ++i) {
    std::array<uint8_t, 32> k{};
    if (!derive(secret, kLabels[i], k)) return fail("OpenSSL could not derive HKDF-SHA256 keys");
    a->macs_[i] = Hmac::create(k);
    OPENSSL_cleanse(k.data(), k.size());
    if (!a->macs_[i]) return fail("OpenSSL could not set up HMAC-SHA256");
  }
  return a;
}

Hmac::Tag FleetAuth::tag(Purpose p, std::initializer_list<std::span<const uint8_t>> fields) {
  // At most 5 fields: each with its length in front.
  std::array<std::array<uint8_t, 4>, 5> lens{};
  std::array<std::span<const uint8_t>, 10> parts{};
  std::size_t n = 0;
  for (const auto& f : fields) {
    if (n / 2 >= lens.size()) break;
    base::store_u32(lens[n / 2].data(), static_cast<uint32_t>(f.size()));
    parts[n] = lens[n / 2];
    parts[n + 1] = f;
    n += 2;
  }
  return macs_[static_cast<std::size_t>(p)]->tag(std::span(parts.data(), n));
}

bool FleetAuth::verify(Purpose p, std::initializer_list<std::span<const uint8_t>> fields,
                       std::span<const uint8_t> tag_in) {
  if (tag_in.size() != kTagSize) return false;
  Hmac& h = *macs_[static_cast<std::size_t>(p)];
  const Hmac::Tag want = tag(p, fields);
  // A tag that could not be computed never verifies.
  if (h.failed()) {
    h.clear_failed();
    return false;
  }
  return CRYPTO_memcmp(want.data(), tag_in.data(), kTagSize) == 0;
}

std::span<const uint8_t> bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string to_hex(std::span<const uint8_t> b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) {
    s += kHex[x >> 4];
    s += kHex[x & 15];
  }
  return s;
}

bool from_hex(std::string_view s, std::span<uint8_t> out) noexcept {
  if (s.size() != out.size() * 2) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(s[2 * i]);
    const int lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return true;
}

const char* to_string(AuthStatus s) noexcept {
  switch (s) {
    case AuthStatus::Ok:
      return "ok";
    case AuthStatus::Unsigned:
      return "unsigned";
    case AuthStatus::Forged:
      return "forged";
    case AuthStatus::Malformed:
      return "malformed";
  }
  return "?";
}

// --- values ----------------------------------------------------------------------------------

void seal_value(FleetAuth& auth, std::string_view redis_key, std::vector<uint8_t>& value) {
  if (value.size() < kTagSize) return;
  const std::size_t body = value.size() - kTagSize;
  const auto t =
      auth.tag(Purpose::Value, {bytes(redis_key), std::span<const uint8_t>(value.data(), body)});
  std::copy(t.begin(), t.end(), value.begin() + static_cast<std::ptrdiff_t>(body));
}

AuthStatus open_value(FleetAuth& auth, std::string_view redis_key, std::span<const uint8_t> value) {
  // magic, version, flags: the flags byte says whether a tag is there at all.
  if (value.size() < 6) return AuthStatus::Malformed;
  if ((value[5] & kValueAuthenticated) == 0) return AuthStatus::Unsigned;
  if (value.size() < 6 + kTagSize) return AuthStatus::Malformed;
  const std::size_t body = value.size() - kTagSize;
  return auth.verify(Purpose::Value, {bytes(redis_key), value.first(body)}, value.subspan(body))
             ? AuthStatus::Ok
             : AuthStatus::Forged;
}

// --- fleet messages --------------------------------------------------------------------------

std::string seal_fleet_message(FleetAuth& auth, std::string_view channel, int64_t time_ms,
                               uint64_t seq, std::string_view inner) {
  const std::string t = std::to_string(time_ms);
  const std::string s = std::to_string(seq);
  const auto tag = auth.tag(Purpose::Message, {bytes(channel), bytes(t), bytes(s), bytes(inner)});
  std::string out = "s1 " + t + " " + s + " " + to_hex(tag) + " ";
  out += inner;
  return out;
}

OpenedMessage open_fleet_message(FleetAuth* auth, std::string_view channel, std::string_view text) {
  OpenedMessage m;
  if (!text.starts_with("s1 ")) {
    m.status = AuthStatus::Unsigned;
    m.inner = text;
    return m;
  }
  std::string_view rest = text.substr(3);
  std::array<std::string_view, 3> f{};
  for (auto& field : f) {
    const std::size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return m;  // Malformed
    field = rest.substr(0, sp);
    rest = rest.substr(sp + 1);
  }
  const auto t = base::parse_decimal<uint64_t>(f[0]);
  const auto s = base::parse_decimal<uint64_t>(f[1]);
  std::array<uint8_t, kTagSize> tag{};
  if (!t || !s || !from_hex(f[2], tag) || rest.empty()) return m;
  m.time_ms = static_cast<int64_t>(*t);
  m.seq = *s;
  m.inner = rest;
  if (auth == nullptr) {
    m.status = AuthStatus::Ok;
    return m;
  }
  m.status =
      auth->verify(Purpose::Message, {bytes(channel), bytes(f[0]), bytes(f[1]), bytes(rest)}, tag)
          ? AuthStatus::Ok
          : AuthStatus::Forged;
  return m;
}

ReplayGuard::Verdict ReplayGuard::check(std::string_view sender, int64_t time_ms, uint64_t seq,
                                        int64_t now_ms) {
  if (time_ms > now_ms + kMaxClockSkewMs) return Verdict::Future;
  if (time_ms < now_ms - kMaxMessageAgeMs) return Verdict::Stale;
  auto it = seen_.find(sender);
  if (it != seen_.end()) {
    if (seq <= it->second.seq) return Verdict::Replayed;
    it->second = Seen{seq, now_ms};
    return Verdict::Accept;
  }
  if (seen_.size() >= kMaxSenders) {
    // Forget senders silent for longer than the age window: replaying their messages is
    // refused as stale anyway.
    std::erase_if(seen_,
                  [&](const auto& e) { return e.second.last_ms < now_ms - kMaxMessageAgeMs; });
    if (seen_.size() >= kMaxSenders) return Verdict::Replayed;  // refuse rather than forget
  }
  seen_.emplace(std::string(sender), Seen{seq, now_ms});
  return Verdict::Accept;
}

// --- ttl caps ---------------------------------------------------------------------------------

std::string seal_ttl_cap(FleetAuth* auth, std::string_view hash_key, std::string_view zone,
                         uint32_t seconds) {
  std::string s = std::to_string(seconds);
  if (auth == nullptr) return s;
  const auto tag = auth->tag(Purpose::TtlCap, {bytes(hash_key), bytes(zone), bytes(s)});
  return s + " " + to_hex(tag);
}

OpenedTtlCap open_ttl_cap(FleetAuth* auth, std::string_view hash_key, std::string_view zone,
                          std::string_view value) {
  OpenedTtlCap c;
  const std::size_t sp = value.find(' ');
  const std::string_view secs = value.substr(0, sp);
  const auto n = base::parse_decimal<uint64_t>(secs);
  if (!n || *n > 2147483647u || secs.size() > 10) return c;  // Malformed
  c.seconds = static_cast<uint32_t>(*n);
  if (auth == nullptr) {
    c.status = AuthStatus::Ok;
    return c;
  }
  if (sp == std::string_view::npos) {
    c.status = AuthStatus::Unsigned;
    return c;
  }
  std::array<uint8_t, kTagSize> tag{};
  if (!from_hex(value.substr(sp + 1), tag)) return c;
  c.status = auth->verify(Purpose::TtlCap, {bytes(hash_key), bytes(zone), bytes(secs)}, tag)
                 ? AuthStatus::Ok
                 : AuthStatus::Forged;
  return c;
}

}  // namespace hg::resolver::fleet
