// Profile: the layers between an authoritative answer and a client's connect() that can keep
// an old address after the TTL says it is gone, each with its hold time and where the figure
// comes from. Read from TOML (`plan --profile FILE`); a documented default ships as
// tools/rehearse/default-profile.toml and is compiled in.
//
//   [[layer]]
//   name    = "JVM"                          # shown in the report
//   kind    = "fixed"                        # fixed | floor | cap | stale | until
//   seconds = 30                             # required for fixed, floor, cap; optional else
//   source  = "OpenJDK InetAddressCachePolicy: networkaddress.cache.ttl defaults to 30 s"
//   note    = "only without a security manager"   # optional
//   negative_seconds = 10                    # optional: its hold of a negative answer
//
// Kinds (see docs/rehearsal.md, "The linger report"):
//  - fixed: keeps an answer `seconds` whatever its TTL says;
//  - floor: keeps it max(TTL, seconds);
//  - cap:   keeps it min(TTL, seconds) — a TTL-obeying cache that never lengthens a TTL;
//  - stale: serves it up to `seconds` past expiry, only while its upstream fails (RFC 8767);
//           no `seconds` means no limit;
//  - until: keeps it until an event (`until = "reload"`); `seconds` is the longest the
//           operator expects between two such events, when known.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/checked.h"

namespace hg::rehearse {

enum class LayerKind : uint8_t { Fixed, Floor, Cap, Stale, Until };

std::string_view to_string(LayerKind k) noexcept;
std::optional<LayerKind> layer_kind_from_text(std::string_view s) noexcept;

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Fixed;
  std::optional<uint32_t> seconds;  ///< nullopt: no bound (stale, until)
  std::string until;                ///< the event that ends an `until` hold, e.g. "reload"
  std::string source;
  std::string note;
  /// How long it keeps a negative answer (NXDOMAIN/NODATA), when that differs from `seconds`
  /// (the JVM: 30 s positive, 10 s negative). nullopt: as `seconds`.
  std::optional<uint32_t> negative_seconds = std::nullopt;
};

struct Profile {
  std::string origin;  ///< file path, or "built-in default profile"
  std::vector<Layer> layers;
};

/// The longest hold a profile may give, 10 years: beyond that it is surely a typo.
inline constexpr uint32_t kMaxLayerSeconds = 315'360'000;

/// Parses a profile from TOML text. `origin` names it in errors, which are one line:
/// "FILE: line 3, column 7: ..." or "FILE: layer 2 (\"JVM\"): seconds: ...".
base::Checked<Profile> parse_profile(std::string_view text, std::string_view origin);
/// Reads and parses a file.
base::Checked<Profile> read_profile(const std::string& path);
/// The shipped default (tools/rehearse/default-profile.toml, compiled in).
std::string_view default_profile_text() noexcept;
Profile default_profile();

}  // namespace hg::rehearse
