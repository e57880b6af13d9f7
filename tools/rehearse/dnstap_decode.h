// A dnstap protobuf message without allocation: decode_dnstap() checks a Dnstap payload's
// protobuf framing and points into it; encode_dnstap() writes one (for the trace generator).
// Field numbers: Dnstap{identity 1, version 2, extra 3, message 14, type 15}; Message{type 1,
// socket_family 2, socket_protocol 3, query_address 4, response_address 5, query_port 6,
// response_port 7, query_time_sec 8, query_time_nsec 9 (fixed32), query_message 10,
// query_zone 11, response_time_sec 12, response_time_nsec 13 (fixed32), response_message 14}.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace hg::rehearse {

struct DnstapView {
  uint32_t type = 0;  ///< Message.Type
  uint32_t socket_family = 0, socket_protocol = 0;
  std::span<const uint8_t> identity, query_address, response_address;
  uint32_t query_port = 0, response_port = 0;
  bool has_query_time = false, has_response_time = false;
  int64_t query_time_ns = 0, response_time_ns = 0;
  std::span<const uint8_t> query_message, response_message;
};

/// Decodes one Dnstap payload. Empty on success, else what is wrong (a static string).
std::string_view decode_dnstap(std::span<const uint8_t> payload, DnstapView& out);

/// Appends the Dnstap payload for `m` to `out` (type MESSAGE; times only when has_*_time).
void encode_dnstap(const DnstapView& m, std::vector<uint8_t>& out);

}  // namespace hg::rehearse
