// Wire enums: record types, classes, opcodes, response codes, sections.
//
// Each enum holds wire values and is open: any uint16_t is a valid RRType, and unknown values
// must round-trip (printed as TYPE12345 / CLASS42, RFC 3597).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hg::wire {

enum class RRType : uint16_t {
  A = 1,
  NS = 2,
  CNAME = 5,
  SOA = 6,
  PTR = 12,
  HINFO = 13,
  MX = 15,
  TXT = 16,
  AAAA = 28,
  SRV = 33,
  NAPTR = 35,
  DNAME = 39,
  OPT = 41,
  DS = 43,
  RRSIG = 46,
  NSEC = 47,
  DNSKEY = 48,
  NSEC3 = 50,
  SVCB = 64,
  HTTPS = 65,
  IXFR = 251,
  AXFR = 252,
  ANY = 255,
  CAA = 257,
};

enum class RRClass : uint16_t { IN = 1, CH = 3, HS = 4, NONE = 254, ANY = 255 };

// STATUS (2) is spelled ServerStatus so that it does not shadow hg::wire::Status.
enum class Opcode : uint8_t { Query = 0, IQuery = 1, ServerStatus = 2, Notify = 4, Update = 5 };

/// Response codes, including the EDNS extended range (12 bits; RFC 6891 §6.1.3).
enum class RCode : uint16_t {
  NoError = 0,
  FormErr = 1,
  ServFail = 2,
  NXDomain = 3,
  NotImp = 4,
  Refused = 5,
  YXDomain = 6,
  YXRRSet = 7,
  NXRRSet = 8,
  NotAuth = 9,
  NotZone = 10,
  BadVers = 16,
  BadCookie = 23,
};

enum class Section : uint8_t { Answer = 0, Authority = 1, Additional = 2 };

std::string to_string(RRType t);        ///< "A", "AAAA", or "TYPE65534"
std::string to_string(RRClass c);       ///< "IN", or "CLASS42"
std::string to_string(RCode r);         ///< "NOERROR", "NXDOMAIN", or "RCODE23"
std::string to_string(Opcode o);        ///< "QUERY", or "OPCODE9"
std::string_view to_string(Section s);  ///< "ANSWER", "AUTHORITY", "ADDITIONAL"

/// Parses "AAAA" or "TYPE28" (case-insensitive); nullopt when unknown.
std::optional<RRType> rrtype_from_text(std::string_view s);
std::optional<RRClass> rrclass_from_text(std::string_view s);

}  // namespace hg::wire
