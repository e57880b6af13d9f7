#include "wire/edns.h"

#include "base/bytes.h"
#include "wire/header.h"
#include "wire/reader.h"

namespace hg::wire {

std::size_t opt_size(const OptSpec& spec) noexcept {
  std::size_t n = 11;  // root owner 1, type 2, class 2, TTL 4, RDLENGTH 2
  for (const auto& o : spec.options)
    n += 4 + o.data.size();
  if (spec.ede) n += 4 + 2 + spec.ede->extra_text.size();
  return n;
}

bool write_opt(WireWriter& w, const OptSpec& spec) noexcept {
  const std::size_t total = opt_size(spec);
  if (total > w.room() || total - 11 > 0xFFFF) return false;
  for (const auto& o : spec.options)
    if (o.data.size() > 0xFFFF) return false;
  if (spec.ede && spec.ede->extra_text.size() > 0xFFFF - 2) return false;
  // Room was checked above, so none of these writes can fail.
  bool ok =
      w.u8(0) && w.u16(static_cast<uint16_t>(RRType::OPT)) && w.u16(spec.udp_size) &&
      w.u32((uint32_t{spec.ext_rcode_high} << 24) | (uint32_t{spec.version} << 16) | spec.flags) &&
      w.u16(static_cast<uint16_t>(total - 11));
  for (const auto& o : spec.options)
    ok = ok && w.u16(o.code) && w.u16(static_cast<uint16_t>(o.data.size())) && w.bytes(o.data);
  if (spec.ede) {
    const auto& t = spec.ede->extra_text;
    ok = ok && w.u16(edns_option::ExtendedError) && w.u16(static_cast<uint16_t>(2 + t.size())) &&
         w.u16(spec.ede->info_code) &&
         w.bytes({reinterpret_cast<const uint8_t*>(t.data()), t.size()});
  }
  return ok;
}

bool append_opt(WireWriter& w, const OptSpec& spec) noexcept {
  if (w.size() < kHeaderSize) return false;
  const auto h = w.written();
  const auto arcount = base::load_u16(&h[10]);
  if (arcount == 0xFFFF || !write_opt(w, spec)) return false;
  w.patch_u16(10, static_cast<uint16_t>(arcount + 1));
  return true;
}

Status validate_edns_options(std::span<const uint8_t> rdata, std::size_t base_offset) noexcept {
  std::size_t i = 0;
  while (i < rdata.size()) {
    if (rdata.size() - i < 4) return Error{ParseError::BadOpt, base_offset + i};
    std::size_t len = static_cast<std::size_t>(base::load_u16(&rdata[i + 2]));
    if (rdata.size() - i - 4 < len) return Error{ParseError::BadOpt, base_offset + i};
    i += 4 + len;
  }
  return {};
}

Result<ExtendedError> parse_extended_error(std::span<const uint8_t> data) noexcept {
  if (data.size() < 2) return Error{ParseError::BadOpt, 0};
  auto code = base::load_u16(&data[0]);
  // RFC 8914 §2: EXTRA-TEXT is UTF-8 and "SHOULD NOT" be NUL-terminated; tolerate one.
  auto text = data.subspan(2);
  if (!text.empty() && text.back() == 0) text = text.first(text.size() - 1);
  return ExtendedError{code, {reinterpret_cast<const char*>(text.data()), text.size()}};
}

std::string_view ede_purpose(uint16_t info_code) noexcept {
  switch (info_code) {
    case 0:
      return "Other";
    case 1:
      return "Unsupported DNSKEY Algorithm";
    case 2:
      return "Unsupported DS Digest Type";
    case 3:
      return "Stale Answer";
    case 4:
      return "Forged Answer";
    case 5:
      return "DNSSEC Indeterminate";
    case 6:
      return "DNSSEC Bogus";
    case 7:
      return "Signature Expired";
    case 8:
      return "Signature Not Yet Valid";
    case 9:
      return "DNSKEY Missing";
    case 10:
      return "RRSIGs Missing";
    case 11:
      return "No Zone Key Bit Set";
    case 12:
      return "NSEC Missing";
    case 13:
      return "Cached Error";
    case 14:
      return "Not Ready";
    case 15:
      return "Blocked";
    case 16:
      return "Censored";
    case 17:
      return "Filtered";
    case 18:
      return "Prohibited";
    case 19:
      return "Stale NXDOMAIN Answer";
    case 20:
      return "Not Authoritative";
    case 21:
      return "Not Supported";
    case 22:
      return "No Reachable Authority";
    case 23:
      return "Network Error";
    case 24:
      return "Invalid Data";
    case 27:
      return "Unsupported NSEC3 Iterations Value";
    default:
      return "";
  }
}

}  // namespace hg::wire
