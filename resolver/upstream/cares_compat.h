// cares_compat: the one place that knows which c-ares it was built against. hourglass supports
// c-ares 1.18 (Debian 12) to 1.34 (Debian 13); every call whose name or shape differs between
// them goes through here, chosen by ARES_VERSION at compile time, and the library found at run
// time is checked against the supported range (library_problem()).
//
// What Upstream asks of c-ares is small and documented in every supported version: a channel
// to one server that sends each query over TCP (ARES_FLAG_USEVC), matches the answer to it and
// reports it once. UDP, the query ID on the wire over UDP, 0x20, retransmission and EDNS
// fallback are Upstream's own (resolver/upstream/upstream.cc), so nothing depends on which ID
// c-ares writes over TCP (1.18 keeps ours, 1.34 chooses its own) or on how it reads sockets.
//
// Like every header here, it does not include <ares.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "resolver/checked.h"
#include "resolver/net/endpoint.h"

struct ares_channeldata;

namespace hg::resolver::cares {

/// The c-ares found at run time (ares_version()), "1.34.5".
std::string library_version();

/// Empty when the c-ares found at run time is in the supported range; otherwise one line that
/// says what was found, what is supported and what to do. `fatal` is set when hourglass cannot
/// work with it (older than 1.18); a newer one is only warned about.
struct LibraryProblem {
  std::string message;
  bool fatal = false;
};
std::optional<LibraryProblem> library_problem();
/// The same check for a version number as c-ares encodes it (0x012205 = 1.34.5); for tests.
std::optional<LibraryProblem> version_problem(int version);

/// What a TCP channel reports for one query: an ARES_* status, and when it is ARES_SUCCESS the
/// response in wire form (valid during the call only; the ID in it is c-ares's, not ours).
using AnswerFn = void (*)(void* arg, int status, std::span<uint8_t> answer);
/// Called when c-ares wants a socket watched (readable/writable) or no longer (both false).
using SocketStateFn = void (*)(void* data, int fd, int readable, int writable);

struct ChannelSettings {
  Endpoint server;
  /// How long one query may wait for its answer (ms).
  int timeout_ms = 3600;
  SocketStateFn socket_state = nullptr;
  void* socket_state_data = nullptr;
};

/// A channel to one server that sends every query over TCP, keeps the connection open, passes
/// every RCODE to the caller (NOCHECKRESP), caches nothing, and writes with MSG_NOSIGNAL.
Checked<ares_channeldata*> open_tcp_channel(const ChannelSettings& settings);

/// Sends `query` (wire form; its ID may be replaced by c-ares) on `channel`. `done` is called
/// exactly once, possibly from inside this call (an error c-ares finds at once), else from
/// ares_process_fd / ares_cancel / ares_destroy.
void send(ares_channeldata* channel, std::span<const uint8_t> query, AnswerFn done, void* arg);

}  // namespace hg::resolver::cares
