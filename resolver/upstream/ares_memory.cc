#include "resolver/upstream/ares_memory.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HG_ARES_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HG_ARES_POOL 0
#endif
#endif
#ifndef HG_ARES_POOL
#define HG_ARES_POOL 1
#endif

namespace hg::resolver::ares_memory {

namespace {

// Every block starts with this header; the caller gets the bytes after it. 16 bytes keep
// malloc's alignment.
struct alignas(16) Header {
  uint32_t size_class;  // index into kClassBytes, or kUnpooled
  uint32_t unused;
  std::size_t size;  // what the caller asked for
};
static_assert(sizeof(Header) == 16);

constexpr std::array<std::size_t, 5> kClassBytes{32, 64, 128, 256, 512};
constexpr uint32_t kUnpooled = UINT32_MAX;

Header* header_of(void* block) noexcept {
  return static_cast<Header*>(block) - 1;
}

uint32_t class_for(std::size_t size) noexcept {
  for (uint32_t c = 0; c < kClassBytes.size(); ++c)
    if (size <= kClassBytes[c]) return c;
  return kUnpooled;
}

std::size_t capacity(const Header& h) noexcept {
  return h.size_class == kUnpooled ? h.size : kClassBytes[h.size_class];
}

void* fresh_block(uint32_t size_class, std::size_t size) noexcept {
  const std::size_t bytes = size_class == kUnpooled ? size : kClassBytes[size_class];
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + bytes));
  if (h == nullptr) return nullptr;
  h->size_class = size_class;
  h->unused = 0;
  h->size = size;
  return h + 1;
}

#if HG_ARES_POOL
// A free block's first bytes (after its header) link it to the next one of its class.
struct FreeLists {
  std::array<void*, kClassBytes.size()> head{};
  std::array<uint32_t, kClassBytes.size()> count{};
  ~FreeLists();
};

// Trivially destructible, so it can still be read while (and after) `lists` is destroyed.
thread_local bool lists_gone = false;
thread_local FreeLists lists;

FreeLists::~FreeLists() {
  lists_gone = true;
  for (void*& top : head) {
    while (top != nullptr) {
      void* next = nullptr;
      std::memcpy(&next, top, sizeof next);
      std::free(header_of(top));
      top = next;
    }
  }
}
#endif

}  // namespace

void* allocate(std::size_t size) noexcept {
  const uint32_t c = class_for(size);
#if HG_ARES_POOL
  if (c != kUnpooled && !lists_gone && lists.head[c] != nullptr) {
    void* block = lists.head[c];
    std::memcpy(&lists.head[c], block, sizeof(void*));
    --lists.count[c];
    header_of(block)->size = size;
    return block;
  }
#endif
  return fresh_block(c, size);
}

void release(void* block) noexcept {
  if (block == nullptr) return;
  Header* h = header_of(block);
#if HG_ARES_POOL
  const uint32_t c = h->size_class;
  if (c != kUnpooled && !lists_gone && lists.count[c] < kMaxFree) {
    std::memcpy(block, &lists.head[c], sizeof(void*));
    lists.head[c] = block;
    ++lists.count[c];
    return;
  }
#endif
  std::free(h);
}

void* reallocate(void* block, std::size_t size) noexcept {
  if (block == nullptr) return allocate(size);
  Header* h = header_of(block);
  if (size <= capacity(*h)) {
    if (h->size_class != kUnpooled) h->size = size;  // an unpooled block keeps its capacity
    return block;
  }
  void* grown = allocate(size);
  if (grown == nullptr) return nullptr;  // the old block stays valid, as with realloc
  std::memcpy(grown, block, h->size < size ? h->size : size);
  release(block);
  return grown;
}

bool pooling() noexcept {
  return HG_ARES_POOL != 0;
}

std::size_t cached_blocks() noexcept {
#if HG_ARES_POOL
  if (lists_gone) return 0;
  std::size_t n = 0;
  for (const uint32_t k : lists.count)
    n += k;
  return n;
#else
  return 0;
#endif
}

}  // namespace hg::resolver::ares_memory
