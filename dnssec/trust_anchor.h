// Trust anchors: the DS and DNSKEY records a validator trusts without proof, read from files
// in zone-file presentation format (RFC 1035 §5, RFC 4034 §2.2 and §5.3), as Debian's
// dns-root-data ships the root's (/usr/share/dns/root.key, /usr/share/dns/root.ds):
//
//   . 172800 IN DNSKEY 257 3 8 AwEAAaz/tAm8yTn4Mfeh5eyI96WSVexTBAvkMgJzkKTOiW1vkIbzxeF3...
//   . IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D
//
// What a line may hold: an absolute owner name (with its trailing dot: there is no $ORIGIN to
// make "@" or a relative name mean anything, so they are refused), an optional TTL (ignored)
// and an optional class IN in either order, the type DS or DNSKEY, and the RDATA:
//   DS      key tag, algorithm, digest type, digest in hex (case-insensitive, spaces allowed);
//   DNSKEY  flags, protocol (3), algorithm, public key in base64 (spaces allowed).
// Algorithms are numbers or RFC 4034 Appendix A.1's mnemonics (RSASHA256, ECDSAP256SHA256...).
// ';' starts a comment; parentheses group a record over several lines, as BIND writes keys.
//
// The parse is strict: a trust anchor file is the root of every answer's trust, so anything
// else — another type or class, bad hex or base64, a digest whose length is not its digest
// type's, a key without the Zone Key flag or with the REVOKE flag — fails the whole file with
// a message "FILE:LINE: what is wrong; how to fix it" (a record over several lines is named
// by the line it begins on), rather than leave out an anchor the operator meant. Algorithm
// and digest type numbers this project does not compute are kept: the validator treats an
// anchor it cannot use as RFC 4035 §5.2 says, not this parser.
//
// Sizes are bounded: a file over 1 MiB, a line over 64 KiB or more than 1000 anchors is
// refused (the root's file is under 1 KiB and holds two).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "wire/name.h"

namespace hg::dnssec {

inline constexpr std::size_t kMaxTrustAnchorFileBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxTrustAnchorLineBytes = std::size_t{64} << 10;
inline constexpr std::size_t kMaxTrustAnchors = 1000;
/// Where Debian's dns-root-data puts the root's keys: the default trust anchor file.
inline constexpr std::string_view kDefaultTrustAnchorFile = "/usr/share/dns/root.key";

/// DNSKEY flags (RFC 4034 §2.1.1, RFC 5011 §3).
inline constexpr uint16_t kDnskeyZoneFlag = 0x0100;
inline constexpr uint16_t kDnskeyRevokeFlag = 0x0080;
inline constexpr uint16_t kDnskeySepFlag = 0x0001;  ///< advisory: a key-signing key

/// The anchors of one zone, each RDATA in wire form, sorted as octet strings, no duplicates.
struct ZoneAnchors {
  wire::Name zone;  ///< lowercased
  /// DS RDATAs: key tag (2), algorithm (1), digest type (1), digest.
  std::vector<std::vector<uint8_t>> ds;
  /// DNSKEY RDATAs: flags (2), protocol (1, always 3), algorithm (1), public key. Every one
  /// has the Zone Key flag and not the REVOKE flag; the SEP flag is advisory (RFC 4034
  /// §2.1.1) and may be either.
  std::vector<std::vector<uint8_t>> dnskey;
  friend bool operator==(const ZoneAnchors&, const ZoneAnchors&) = default;
};

class TrustAnchors {
 public:
  /// The anchored zones in canonical order (RFC 4034 §6.1).
  const std::vector<ZoneAnchors>& zones() const noexcept { return zones_; }
  bool empty() const noexcept { return zones_.empty(); }
  /// The number of anchors (DS and DNSKEY RDATAs) over all zones.
  std::size_t count() const noexcept;

  /// The anchors of exactly `zone` (any letter case); nullptr when it has none.
  const ZoneAnchors* find(const wire::Name& zone) const noexcept;
  /// The anchors of the deepest anchored zone that is `name` or an ancestor of it: where
  /// validation of `name` starts. nullptr when no anchor covers `name`, or when a zone
  /// declared insecure lies between `name` and that anchor (or is `name`).
  const ZoneAnchors* closest(const wire::Name& name) const;
  /// Whether some anchored zone is `zone` or below it.
  bool anchored_at_or_below(const wire::Name& zone) const;

  /// Declares `zone` insecure: a negative trust anchor (RFC 7646). Names at and below it are
  /// validated from no anchor (insecure, never bogus, never AD) unless an anchor lies deeper.
  /// Not part of the file (to_text() leaves it out); idempotent.
  void add_insecure(const wire::Name& zone);
  /// The zones declared insecure, lowercased, in canonical order.
  const std::vector<wire::Name>& insecure() const noexcept { return insecure_; }

  /// The anchors as a trust anchor file (one record a line, no TTL): parse_trust_anchors()
  /// of it gives these anchors back.
  std::string to_text() const;

  friend bool operator==(const TrustAnchors&, const TrustAnchors&) = default;

 private:
  friend class TrustAnchorsBuilder;
  std::vector<ZoneAnchors> zones_;
  std::vector<wire::Name> insecure_;
};

/// TrustAnchors or a one-line error message. The member names follow std::expected like
/// wire::Result and resolver::Checked (which dnssec/, below resolver/, cannot include).
class [[nodiscard]] TrustAnchorsResult {
 public:
  TrustAnchorsResult(TrustAnchors value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  static TrustAnchorsResult failure(std::string message) {
    return TrustAnchorsResult(std::in_place_index<1>, std::move(message));
  }

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  TrustAnchors& value() & { return std::get<0>(v_); }
  const TrustAnchors& value() const& { return std::get<0>(v_); }
  TrustAnchors&& value() && { return std::get<0>(std::move(v_)); }
  TrustAnchors& operator*() & { return value(); }
  const TrustAnchors& operator*() const& { return value(); }
  TrustAnchors* operator->() { return &value(); }
  const TrustAnchors* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_); }

 private:
  TrustAnchorsResult(std::in_place_index_t<1> tag, std::string message)
      : v_(tag, std::move(message)) {}
  std::variant<TrustAnchors, std::string> v_;
};

/// Parses the text of a trust anchor file; `source_name` (the file's path) begins every error
/// message, followed by the line number.
TrustAnchorsResult parse_trust_anchors(std::string_view text, std::string_view source_name);

/// Reads and parses the trust anchor file at `path`. A missing file's message says to install
/// dns-root-data when `path` is kDefaultTrustAnchorFile.
TrustAnchorsResult load_trust_anchors(const std::string& path);

/// The DS RDATA (key tag, algorithm, digest type, digest) of digest type `digest_type` for the
/// DNSKEY RDATA `dnskey_rdata` at `owner`; nullopt for a digest type ds_digest() does not
/// compute or an RDATA shorter than a DNSKEY's fixed fields.
std::optional<std::vector<uint8_t>> ds_of_dnskey(const wire::Name& owner,
                                                 std::span<const uint8_t> dnskey_rdata,
                                                 uint8_t digest_type);

}  // namespace hg::dnssec
