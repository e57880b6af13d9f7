// Endpoint and Cidr live in base/endpoint.h (tools that must not link the daemon parse and
// print addresses too); the resolver's rooms keep including this name for them.
#pragma once

#include "base/endpoint.h"
#include "resolver/checked.h"

namespace hg::resolver {
using base::Cidr;
using base::Endpoint;
using base::parse_endpoint;
}  // namespace hg::resolver
