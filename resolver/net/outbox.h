// The UDP outbox: datagrams a thread's loop iteration produces outside the listeners' own
// batches (the answers sent after an upstream query, one per callback) wait in a per-thread
// outbox and leave at the end of that iteration, one sendmmsg per socket instead of one
// sendto each. Any thread may send this way (a UDP send is atomic per datagram); outside of
// a loop iteration a datagram leaves at once. Also the sendmmsg loop the listeners' batches
// use.
//
// Knows nothing of DNS: a socket, an address, some bytes.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <span>

namespace hg::resolver {

/// Where a UDP datagram goes: a socket and the peer's address (addr_len 0: the socket is
/// connected, and the datagram goes to the address it is connected to).
struct UdpPeer {
  int fd = -1;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  const sockaddr* sa() const noexcept { return reinterpret_cast<const sockaddr*>(&addr); }
};

namespace outbox {

/// Sends one datagram at the end of this thread's current loop iteration, together with the
/// others the iteration produced (one sendmmsg per socket); outside of an iteration, now.
/// The bytes are copied. False when the datagram could not be sent now (full send buffer).
bool send_later(const UdpPeer& peer, std::span<const uint8_t> bytes) noexcept;

/// Sends what send_later() holds for this thread now, if any of it is for socket `fd`. For a
/// socket about to be closed: its number could otherwise be reused before the end of the
/// iteration.
void send_held_now(int fd) noexcept;

/// Sends msgs[0, n) on `fd` with as few sendmmsg calls as the kernel allows. A full send
/// buffer drops the rest (those clients retry); a datagram refused for itself (EPERM,
/// EINVAL...) is skipped and the others still go; one refused with ECONNREFUSED (the ICMP
/// error of an earlier datagram on a connected socket) is tried once more.
void send_all(int fd, mmsghdr* msgs, unsigned n) noexcept;

}  // namespace outbox
}  // namespace hg::resolver
