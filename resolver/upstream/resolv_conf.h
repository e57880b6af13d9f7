// The resolv.conf reader lives in base/resolv_conf.h (hourglass-rehearse reads the system's
// resolv.conf without linking the daemon); the resolver's rooms keep including this name.
#pragma once

#include "base/resolv_conf.h"
