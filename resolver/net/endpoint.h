// Endpoint and Cidr live in base/endpoint.h (tools that must not link the daemon parse and
// print addresses too); the resolver's rooms keep including this name for them.
#pragma once

#include "base/endpoint.h"
