// The emulated device's memory: one reserved range of host address space. Every allocation gets
// fresh pages followed by an inaccessible guard page, and freed pages are never handed out again
// (they become inaccessible), so a use after free or a read past the end faults instead of
// reading another buffer — in the hazard checker with the exact bounds (memory_map.hpp), and for
// any host code by the page protection.
#pragma once
#include <cstddef>

namespace db::emulation {

// nullptr when the arena is exhausted.
void* device_arena_allocate(size_t bytes);
void device_arena_release(void* p, size_t bytes);
bool device_arena_contains(const void* p);

}  // namespace db::emulation
