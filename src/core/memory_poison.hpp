// A test aid for reads of a buffer before its first write. Host memory fresh from the OS is
// zero, so such a read can pass every CPU test, while the GPU's stream-ordered pool hands a
// freed block to the next allocation with its old contents (doc/cuda.md "Reads before writes").
// While poisoning is on, every new block of host memory is filled with 0xFF bytes — a NaN in
// float, double and bf16 — so the read shows on the CPU (tests/model/poisoned_memory_test.cpp).
#pragma once

namespace db::memory {

void set_poison_new_host_memory(bool on);

}  // namespace db::memory
