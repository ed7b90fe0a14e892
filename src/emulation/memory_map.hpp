// Which host addresses are emulated device memory: the runtime registers every allocation it
// hands out (cudaMalloc, cudaMallocAsync, cudaHostAlloc), the hazard checker asks whether an
// access stays inside one. Device allocations come from one reserved address range (the
// device arena) with a gap after each, so a read past an allocation's end lands in no allocation.
#pragma once
#include <cstddef>

namespace db::emulation {

enum class MemoryKind { device, pinned_host };

struct Allocation {
  const char* base = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
};

void register_allocation(const void* base, size_t bytes, MemoryKind kind);
void unregister_allocation(const void* base);

// The live allocation holding all of [p, p + bytes), or nullptr when there is none (p in no
// allocation, or the range crosses the end of the one it starts in).
const Allocation* find_allocation(const void* p, size_t bytes = 1);

// Whether p lies in the device arena (live, freed or gap): an access there that find_allocation
// does not cover is out of bounds.
bool in_device_arena(const void* p);

}  // namespace db::emulation
