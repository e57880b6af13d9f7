#include "wire/types.h"

#include <array>
#include <utility>

#include "base/decimal.h"
#include "wire/name.h"

namespace hg::wire {

namespace {

constexpr std::array<std::pair<RRType, std::string_view>, 24> kTypeNames{{
    {RRType::A, "A"},       {RRType::NS, "NS"},         {RRType::CNAME, "CNAME"},
    {RRType::SOA, "SOA"},   {RRType::PTR, "PTR"},       {RRType::HINFO, "HINFO"},
    {RRType::MX, "MX"},     {RRType::TXT, "TXT"},       {RRType::AAAA, "AAAA"},
    {RRType::SRV, "SRV"},   {RRType::NAPTR, "NAPTR"},   {RRType::DNAME, "DNAME"},
    {RRType::OPT, "OPT"},   {RRType::DS, "DS"},         {RRType::RRSIG, "RRSIG"},
    {RRType::NSEC, "NSEC"}, {RRType::DNSKEY, "DNSKEY"}, {RRType::NSEC3, "NSEC3"},
    {RRType::SVCB, "SVCB"}, {RRType::HTTPS, "HTTPS"},   {RRType::IXFR, "IXFR"},
    {RRType::AXFR, "AXFR"}, {RRType::ANY, "ANY"},       {RRType::CAA, "CAA"},
}};

constexpr std::array<std::pair<RRClass, std::string_view>, 5> kClassNames{{
    {RRClass::IN, "IN"},
    {RRClass::CH, "CH"},
    {RRClass::HS, "HS"},
    {RRClass::NONE, "NONE"},
    {RRClass::ANY, "ANY"},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(static_cast<uint8_t>(a[i])) != ascii_lower(static_cast<uint8_t>(b[i])))
      return false;
  }
  return true;
}

std::optional<uint16_t> number_after(std::string_view s, std::string_view prefix) {
  if (s.size() <= prefix.size() || !iequals(s.substr(0, prefix.size()), prefix)) return {};
  return base::parse_decimal<uint16_t>(s.substr(prefix.size()));
}

}  // namespace

std::string to_string(RRType t) {
  for (auto& [v, n] : kTypeNames)
    if (v == t) return std::string(n);
  return "TYPE" + std::to_string(static_cast<unsigned>(t));
}

std::string to_string(RRClass c) {
  for (auto& [v, n] : kClassNames)
    if (v == c) return std::string(n);
  return "CLASS" + std::to_string(static_cast<unsigned>(c));
}

std::string to_string(RCode r) {
  switch (r) {
    case RCode::NoError:
      return "NOERROR";
    case RCode::FormErr:
      return "FORMERR";
    case RCode::ServFail:
      return "SERVFAIL";
    case RCode::NXDomain:
      return "NXDOMAIN";
    case RCode::NotImp:
      return "NOTIMP";
    case RCode::Refused:
      return "REFUSED";
    case RCode::YXDomain:
      return "YXDOMAIN";
    case RCode::YXRRSet:
      return "YXRRSET";
    case RCode::NXRRSet:
      return "NXRRSET";
    case RCode::NotAuth:
      return "NOTAUTH";
    case RCode::NotZone:
      return "NOTZONE";
    case RCode::BadVers:
      return "BADVERS";
    case RCode::BadCookie:
      return "BADCOOKIE";
  }
  return "RCODE" + std::to_string(static_cast<unsigned>(r));
}

std::string to_string(Opcode o) {
  switch (o) {
    case Opcode::Query:
      return "QUERY";
    case Opcode::IQuery:
      return "IQUERY";
    case Opcode::ServerStatus:
      return "STATUS";
    case Opcode::Notify:
      return "NOTIFY";
    case Opcode::Update:
      return "UPDATE";
  }
  return "OPCODE" + std::to_string(static_cast<unsigned>(o));
}

std::string_view to_string(Section s) {
  switch (s) {
    case Section::Answer:
      return "ANSWER";
    case Section::Authority:
      return "AUTHORITY";
    case Section::Additional:
      return "ADDITIONAL";
  }
  return "SECTION?";
}

std::optional<RRType> rrtype_from_text(std::string_view s) {
  for (auto& [v, n] : kTypeNames)
    if (iequals(s, n)) return v;
  if (auto v = number_after(s, "TYPE")) return static_cast<RRType>(*v);
  return {};
}

std::optional<RRClass> rrclass_from_text(std::string_view s) {
  for (auto& [v, n] : kClassNames)
    if (iequals(s, n)) return v;
  if (auto v = number_after(s, "CLASS")) return static_cast<RRClass>(*v);
  return {};
}

}  // namespace hg::wire
