// Global operator new/delete replacement that counts allocations (see alloc_counter.h).
// Kept in its own file: GCC's -Wmismatched-new-delete misfires when a replaced operator
// delete is visible in the same translation unit as the news it frees.
#include "alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace hg::cache::testing {
long allocation_count() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}
}  // namespace hg::cache::testing
