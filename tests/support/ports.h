// Loopback ports and sockets for tests.
//
// free_port: a port on a loopback address that is free for both UDP and TCP at the moment of
// asking (the kernel chooses it; it is bound and released, so a small race with other
// programs is accepted). 0 if none was found in a few tries.
//
// The socket helpers make what almost every socket test starts with: a socket bound to a
// loopback address on a port the kernel chooses (a listener, a fake server), and a TCP
// client connected to one. They return -1 with errno kept on failure, for the test to assert.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace hg::test {

uint16_t free_port(const char* ipv4 = "127.0.0.1");

/// The IPv4 socket address `ip`:`port` (`ip` dotted, e.g. "127.0.0.2"); aborts on a malformed
/// address (a bug in the test).
sockaddr_in ipv4_address(const char* ip, uint16_t port);

/// A socket of `type` (SOCK_STREAM or SOCK_DGRAM, optionally | SOCK_NONBLOCK; SOCK_CLOEXEC is
/// added) bound to `ip` on a port the kernel chooses; the address it got in `bound`.
int bind_any_port(int type, sockaddr_in& bound, const char* ip = "127.0.0.1");

/// bind_any_port() of a stream socket (`flags`: e.g. SOCK_NONBLOCK), listening with `backlog`.
int listen_any_port(sockaddr_in& bound, int backlog = 64, int flags = 0,
                    const char* ip = "127.0.0.1");

/// A TCP connection from `from` (a kernel port) to `to`; `flags` (e.g. SOCK_NONBLOCK) are added
/// to SOCK_CLOEXEC, and a non-blocking connect under way counts as made. A `send_bound` above
/// zero bounds a blocking connect (SO_SNDTIMEO: later blocking sends too).
int connect_tcp(const sockaddr_in& to, const char* from = "127.0.0.1", int flags = 0,
                std::chrono::milliseconds send_bound = {});

/// Appends to `into` whatever has arrived on the stream socket `fd`, without waiting; true
/// when the other end has closed the connection (end of stream or a reset), false when it is
/// open and has sent nothing more yet.
bool read_available(int fd, std::string& into);

/// Whether the other end has closed the connection `fd`: read_available(), its data dropped.
bool closed_by_peer(int fd);

/// Sends `datagram` over UDP from `from` (a loopback address; `from_port` 0: the kernel's
/// choice) to 127.0.0.1:`to_port` on a connected socket, and returns what the sender sees
/// within `wait`: ECONNREFUSED when the kernel answered with ICMP port unreachable (no
/// socket would take it: a closed port), 0 when nothing came back or a reply did (a socket
/// on that port took it), another errno if the probe could not be sent.
int udp_probe(const char* from, uint16_t from_port, uint16_t to_port, const std::string& datagram,
              std::chrono::milliseconds wait = std::chrono::milliseconds{1000});

}  // namespace hg::test
