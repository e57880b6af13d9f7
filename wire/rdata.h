// Typed RDATA: the record types hourglass understands, and RFC 3597 opaque data for the rest.
//
// Rdata is a value type (it owns its bytes) used by tools, tests and the owned message model;
// the packet path (cache hits, the responder) never builds one. Reading decompresses names in
// RDATA; writing compresses names only in the RFC 1035 types (NS, CNAME, PTR, MX, SOA), since
// RFC 3597 §4 forbids compression in newer types (SRV: RFC 2782; DNAME: RFC 6672 §2.5).
//
// Types without a struct here (DS, RRSIG, HINFO, ...) are kept as RdataOpaque, so their bytes
// round-trip exactly; the printer shows them in RFC 3597 generic form (`\# 3 ABCDEF`, upper case as
// dig prints it).
//
// Must not include anything beyond the standard library and wire/.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "wire/message.h"
#include "wire/name.h"
#include "wire/result.h"
#include "wire/types.h"
#include "wire/writer.h"

namespace hg::wire {

struct RdataA {
  std::array<uint8_t, 4> address{};
  friend bool operator==(const RdataA&, const RdataA&) = default;
};

struct RdataAAAA {
  std::array<uint8_t, 16> address{};
  friend bool operator==(const RdataAAAA&, const RdataAAAA&) = default;
};

/// NS, CNAME, PTR and DNAME: a single domain name.
struct RdataName {
  Name name;
  friend bool operator==(const RdataName&, const RdataName&) = default;
};

struct RdataMX {
  uint16_t preference = 0;
  Name exchange;
  friend bool operator==(const RdataMX&, const RdataMX&) = default;
};

/// One or more <character-string>s, each 0..255 octets (RFC 1035 §3.3.14).
struct RdataTXT {
  std::vector<std::vector<uint8_t>> strings;
  friend bool operator==(const RdataTXT&, const RdataTXT&) = default;
};

struct RdataSRV {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  Name target;
  friend bool operator==(const RdataSRV&, const RdataSRV&) = default;
};

struct RdataSOA {
  Name mname;
  Name rname;
  uint32_t serial = 0;
  uint32_t refresh = 0;
  uint32_t retry = 0;
  uint32_t expire = 0;
  uint32_t minimum = 0;
  friend bool operator==(const RdataSOA&, const RdataSOA&) = default;
};

/// RFC 8659 §4.1: flags, a 1..255-octet tag, and the value (the rest of the RDATA).
struct RdataCAA {
  uint8_t flags = 0;
  std::vector<uint8_t> tag;
  std::vector<uint8_t> value;
  friend bool operator==(const RdataCAA&, const RdataCAA&) = default;
};

/// Any other type: the RDATA bytes as they were (RFC 3597).
struct RdataOpaque {
  std::vector<uint8_t> data;
  friend bool operator==(const RdataOpaque&, const RdataOpaque&) = default;
};

using Rdata = std::variant<RdataA, RdataAAAA, RdataName, RdataMX, RdataTXT, RdataSRV, RdataSOA,
                           RdataCAA, RdataOpaque>;

/// True for the types whose RDATA names may be compressed when written (RFC 3597 §4:
/// only the "well-known" RFC 1035 types).
bool rdata_names_compressible(RRType type) noexcept;
/// True for the types whose RDATA read_rdata() decodes a name in (the above, DNAME and SRV);
/// for every other type the RDATA is a copy of its bytes.
bool rdata_has_names(RRType type) noexcept;

/// Decodes the RDATA at [rdata_offset, rdata_offset + rdlength) of `packet` as `type`.
/// Names may be compressed and point anywhere earlier in the packet.
/// Errors: RdataLength when the content does not fill the RDATA exactly (or is too short), and
/// the name errors of read_name() (offsets absolute in `packet`).
Result<Rdata> read_rdata(std::span<const uint8_t> packet, RRType type, std::size_t rdata_offset,
                         std::size_t rdlength);

/// Decodes one record of a parsed message.
Result<Rdata> read_rdata(const Message& m, const RecordView& rr);

/// Writes the RDATA content (not RDLENGTH) for `type`. Returns false, having written a prefix
/// the caller must roll back, when it does not fit the writer's limit, or when the value
/// cannot be encoded (a TXT string or CAA value over its length limit).
[[nodiscard]] bool write_rdata(WireWriter& w, RRType type, const Rdata& rdata);

/// Writes RDLENGTH followed by the RDATA, patching the length afterwards; false (after rolling
/// back to where it started) when it does not fit or exceeds 65535 octets.
[[nodiscard]] bool write_rdata_with_length(WireWriter& w, RRType type, const Rdata& rdata);

/// Presentation text of the RDATA as dig prints it: "192.0.2.1", "10 mail.example.",
/// "\"v=spf1\" \"-all\"", "0 issue \"ca.example\"", and "\# 3 ABCDEF" for opaque data.
std::string rdata_to_text(const Rdata& rdata);

/// "2001:db8::1": RFC 5952 text form of an IPv6 address (embedded IPv4 for ::ffff:0:0/96).
std::string ipv6_to_text(const std::array<uint8_t, 16>& a);

/// A <character-string> in quotes, escaping '"' and '\\' with a backslash and bytes outside
/// 0x20..0x7e as \DDD (RFC 1035 §5.1).
std::string quoted_string(std::span<const uint8_t> s);

}  // namespace hg::wire
