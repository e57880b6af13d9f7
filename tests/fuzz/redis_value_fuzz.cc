// libFuzzer target for what the fleet reads back from Redis (resolver/fleet/redis_value.h): values
// (decode_value), fleet control messages (decode_fleet_message) and cache-key names
// (name_of_cache_key). Redis is shared: anything in it may have been written by another
// program or by hand.
//
// The first input byte picks what the rest is:
//   0: a raw value, decoded for a fixed key and for the key its own header names;
//   1: a message wrapped in a valid value (right key, right CRC), so the fuzzer reaches the
//      DNS parsing behind the checksum;
//   2: a fleet message; 3: a Redis key;
//   4: a value checked with a fleet key (fleet_auth.h open_value) under a fixed Redis key;
//   5: an authenticated fleet message (open_fleet_message, with and without a key);
//   6: a fleet ttl cap's hash value (open_ttl_cap).
// Properties, each an abort when violated:
//  1. An Ok value's message span lies inside the input and parses strictly with the key's
//     question; its insert time round-trips through encode_value.
//  2. A decoded fleet message re-encodes to text that decodes to the same message.
//  3. value_age_ms is within [0, cap].
//  4. Nothing the fuzzer writes verifies with the key unless it is what seal_* produce (the
//     fuzzer does not know the key); what seal_value/seal_fleet_message/seal_ttl_cap produce
//     for the input always opens Ok, and flipping its last byte never does.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "cache/key.h"
#include "resolver/fleet/fleet_auth.h"
#include "resolver/fleet/redis_value.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/message.h"
#include "wire/name.h"

namespace {

using namespace hg;
using namespace hg::resolver::fleet;

using hg::fuzz::check;

cache::CacheKey fixed_key() {
  auto n = wire::Name::from_text("www.example.com.");
  return cache::CacheKey::make(*n, wire::RRType::A, 1, false, false);
}

void check_value(std::span<const uint8_t> v, const cache::CacheKey& key) {
  wire::Message m;
  const DecodedValue d = decode_value(v, key, m);
  if (d.status != ValueStatus::Ok) return;
  check(d.message.data() >= v.data() && d.message.data() + d.message.size() <= v.data() + v.size(),
        "message span inside the value");
  check(m.questions().size() == 1 && m.questions()[0].type == key.qtype, "question matches");
  const auto again = encode_value(key, d.inserted_ms, d.message);
  wire::Message m2;
  const DecodedValue d2 = decode_value(again, key, m2);
  check(d2.status == ValueStatus::Ok && d2.inserted_ms == d.inserted_ms, "value round trip");
  const int64_t age = value_age_ms(d.inserted_ms, 1'700'000'000'000, 86'400'000);
  check(age >= 0 && age <= 86'400'000, "age within bounds");
}

FleetAuth& fuzz_auth() {
  static const std::string secret = "fuzz-secret-fuzz-secret-fuzz-secret-0123";
  static auto a = FleetAuth::create(bytes(secret), nullptr);
  return *a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0] % 7) {
    case 0: {
      check_value(in, fixed_key());
      // The key the value claims to be for, when its header names one.
      if (in.size() >= 20 && in.size() >= 20u + in[19]) {
        auto name = wire::Name::from_wire(in.subspan(20, in[19]));
        if (name) {
          const auto type = static_cast<wire::RRType>(base::load_u16(&in[14]));
          const auto klass = base::load_u16(&in[16]);
          check_value(
              in, cache::CacheKey::make(*name, type, klass, (in[18] & 1) != 0, (in[18] & 2) != 0));
        }
      }
      break;
    }
    case 1: {
      const auto key = fixed_key();
      const auto v = encode_value(key, 1'700'000'000'000, in);
      check_value(v, key);
      break;
    }
    case 2: {
      const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
      auto m = decode_fleet_message(text);
      if (m) {
        auto m2 = decode_fleet_message(encode_fleet_message(*m));
        check(m2.has_value() && m2->op == m->op && m2->sender == m->sender && m2->name == m->name &&
                  m2->seconds == m->seconds,
              "fleet message round trip");
      }
      break;
    }
    case 3: {
      const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
      auto n = name_of_cache_key("hg:", text);
      if (n) check(n->size() <= 255, "name length");
      break;
    }
    case 4: {
      const std::string rkey = "hg:c:www.example.com. 1 1 0";
      const AuthStatus st = open_value(fuzz_auth(), rkey, in);
      check(st != AuthStatus::Ok, "a value the fuzzer wrote verifies");
      check_value(in, fixed_key());
      // Sealed, it opens; altered, it does not.
      const auto key = fixed_key();
      auto v = encode_value(key, 1'700'000'000'000, in, true);
      if (v.empty()) break;
      seal_value(fuzz_auth(), rkey, v);
      check(open_value(fuzz_auth(), rkey, v) == AuthStatus::Ok, "sealed value opens");
      v.back() ^= 1;
      check(open_value(fuzz_auth(), rkey, v) == AuthStatus::Forged, "altered value refused");
      break;
    }
    case 5: {
      const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
      const OpenedMessage o = open_fleet_message(&fuzz_auth(), "hg:fleet", text);
      check(o.status != AuthStatus::Ok, "a message the fuzzer wrote verifies");
      const OpenedMessage plain = open_fleet_message(nullptr, "hg:fleet", text);
      if (plain.status != AuthStatus::Malformed) {
        check(plain.inner.data() >= text.data() &&
                  plain.inner.data() + plain.inner.size() <= text.data() + text.size(),
              "inner inside the text");
        (void)decode_fleet_message(plain.inner);
      }
      if (text.empty()) break;  // no message is empty; an empty one is Malformed sealed or not
      std::string sealed = seal_fleet_message(fuzz_auth(), "hg:fleet", 1, 2, text);
      const OpenedMessage back = open_fleet_message(&fuzz_auth(), "hg:fleet", sealed);
      check(back.status == AuthStatus::Ok && back.inner == text && back.seq == 2,
            "sealed message opens");
      sealed.back() = sealed.back() == 'a' ? 'b' : 'a';
      check(open_fleet_message(&fuzz_auth(), "hg:fleet", sealed).status != AuthStatus::Ok,
            "altered message refused");
      ReplayGuard g;
      (void)g.check(plain.inner, plain.time_ms, plain.seq, 1'700'000'000'000);
      break;
    }
    case 6: {
      const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
      const std::size_t cut = text.find('=');
      const std::string_view zone = text.substr(0, cut);
      const std::string_view value = cut == std::string_view::npos ? "" : text.substr(cut + 1);
      const OpenedTtlCap c = open_ttl_cap(&fuzz_auth(), "hg:ttl-caps", zone, value);
      check(c.status != AuthStatus::Ok, "a cap the fuzzer wrote verifies");
      const OpenedTtlCap plain = open_ttl_cap(nullptr, "hg:ttl-caps", zone, value);
      if (plain.status == AuthStatus::Ok) check(plain.seconds <= 2147483647u, "cap in range");
      const std::string sealed = seal_ttl_cap(&fuzz_auth(), "hg:ttl-caps", zone, 60);
      check(open_ttl_cap(&fuzz_auth(), "hg:ttl-caps", zone, sealed).status == AuthStatus::Ok,
            "sealed cap opens");
      break;
    }
  }
  return 0;
}
