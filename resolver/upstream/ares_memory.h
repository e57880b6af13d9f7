// ares_memory: the allocator hourglassd gives c-ares (through ares_library_init_mem).
//
// c-ares 1.18 allocates five small blocks for every query it sends (the query, its copy for
// TCP, the per-server state, and the two names it expands to match the answer to the query)
// and frees them when the answer comes. With a hundred queries in flight, glibc's per-thread
// cache (seven blocks per size) runs dry and most of those calls take malloc's slow path:
// at 100k misses a second, `_int_malloc` under `ares_send` alone was ~0.9 % of the worker's
// CPU. Here each thread keeps a free list per size class instead (32 to 512 bytes, at most
// kMaxFree blocks each), so a steady stream of queries reuses the same blocks without
// entering malloc at all. Larger blocks go to malloc as before.
//
// A block freed on another thread joins that thread's lists (c-ares channels are per worker,
// so that does not happen in practice, and would be harmless). A thread's lists are freed
// when it ends; a block freed after that goes straight back to malloc.
//
// Under AddressSanitizer or ThreadSanitizer the pool is off — every call goes to malloc — so
// the sanitizers still see every c-ares block.
#pragma once

#include <cstddef>

namespace hg::resolver::ares_memory {

/// The three functions for ares_library_init_mem. Same contracts as malloc/free/realloc.
void* allocate(std::size_t size) noexcept;
void release(void* block) noexcept;
void* reallocate(void* block, std::size_t size) noexcept;

/// Whether this build keeps free lists (false under a sanitizer).
bool pooling() noexcept;
/// Blocks held in the calling thread's free lists (tests).
std::size_t cached_blocks() noexcept;
/// Most blocks a thread keeps per size class.
inline constexpr std::size_t kMaxFree = 512;

}  // namespace hg::resolver::ares_memory
