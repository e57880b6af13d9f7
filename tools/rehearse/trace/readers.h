// The trace readers behind open_trace(): internal to hg_rehearse (and its tests).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {

/// A dnstap Frame Streams reader over `file` (taken over, closed by the reader).
std::unique_ptr<TraceReader> make_dnstap_reader(std::FILE* file, const std::string& name,
                                                const TraceOptions& options);

/// A pcap / pcapng reader over `file` (taken over). nullptr with `error` set when libpcap
/// cannot read the file header.
std::unique_ptr<TraceReader> make_pcap_reader(std::FILE* file, const std::string& name,
                                              const TraceOptions& options, TraceError& error);

/// The question of a DNS message as a 64-bit hash (lowercased name, type, class), mixed with
/// `seed`; 0 questions or a malformed one hash the seed alone. Never reads past `msg`.
uint64_t question_hash(std::span<const uint8_t> msg, uint64_t seed);

}  // namespace hg::rehearse
