// open_bound_socket: the socket set-up both listeners share — create, set options, bind,
// read back the bound address — with start-up errors that say how to fix them.
#pragma once

#include <utility>

#include "resolver/net/endpoint.h"

namespace hg::resolver {

struct BoundSocket {
  int fd = -1;
  Endpoint local;  ///< the bound address (the kernel's port when port 0 was asked)
};

/// Creates a non-blocking, close-on-exec socket of `type` (SOCK_DGRAM or SOCK_STREAM), sets
/// SO_REUSEPORT when `reuse_port` (several threads on one port), IPV6_V6ONLY for IPv6, and
/// for TCP SO_REUSEADDR, binds it to `addr` and, for TCP, listens. On failure the socket is
/// closed and the message names the protocol, the address, the reason and the usual fix.
/// `first_of_port`: the first of our sockets on a fixed port. With SO_REUSEPORT another
/// program's socket that also set it could share the port without an error; so the port is
/// first bound once without it, to fail with EADDRINUSE as a plain socket would.
Checked<BoundSocket> open_bound_socket(int type, const Endpoint& addr, bool reuse_port,
                                       bool first_of_port = false);

}  // namespace hg::resolver
