// Allocation counting for the cache tests: alloc_counter.cc replaces the global operator
// new for the whole hg_cache_tests binary, so a test can prove that the hit path (lookup +
// render) allocates nothing (docs/architecture.md §2: no allocation beyond the output buffer).
#pragma once

namespace hg::cache::testing {

/// Number of operator new calls so far in this process.
long allocation_count() noexcept;

}  // namespace hg::cache::testing
