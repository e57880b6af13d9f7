// free_port: a port on a loopback address that is free for both UDP and TCP at the moment of
// asking (the kernel chooses it; it is bound and released, so a small race with other
// programs is accepted). 0 if none was found in a few tries.
#pragma once

#include <cstdint>

namespace hg::test {

uint16_t free_port(const char* ipv4 = "127.0.0.1");

}  // namespace hg::test
