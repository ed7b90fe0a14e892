// The inline PTX of the backend (sm_80+ instructions the flash kernel uses), each behind one
// device function. Under DEPTHBENCH_CUDA_EMULATION the same functions run the emulated device's
// implementation of the instruction (src/emulation/simt/ptx.hpp), written from the PTX ISA.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#if defined(DEPTHBENCH_CUDA_EMULATION)
#include "emulation/simt/ptx.hpp"
#endif

namespace db::cuda::ptx {

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d += a·b for one 16×8×16 tile, the
// fragments in the ISA's per-lane layout (flash_attention_tiling.hpp names its elements).
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::ptx::mma_m16n8k16_bf16_f32(d, a, b);
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: four 8×8 matrices of 16-bit values, this
// lane's row address `row` in shared memory (lanes 8i..8i+7 address matrix i).
template <bool kTranspose>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  if constexpr (kTranspose)
    emulation::ptx::ldmatrix_x4_trans(r, row);
  else
    emulation::ptx::ldmatrix_x4(r, row);
#else
  const uint32_t address = uint32_t(__cvta_generic_to_shared(row));
  if constexpr (kTranspose)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#endif
}

// cp.async.{cg,ca}.shared.global: BYTES (16 or 4) from global `src` to shared `dst`, of which
// `src_bytes` are read and the rest zero-filled (0: nothing read). Complete only after
// cp_async_commit() and a cp_async_wait<N>() that covers its group.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 16);
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::ptx::cp_async(dst, src, BYTES, src_bytes);
#else
  const uint32_t address = uint32_t(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16)  // .cg: through L2 only (the tile is read once per block)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(src),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(address), "l"(src),
                 "r"(src_bytes)
                 : "memory");
#endif
}

// cp.async.commit_group: this thread's copies issued since the last commit form one group.
__device__ __forceinline__ void cp_async_commit() {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::ptx::cp_async_commit_group();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// cp.async.wait_group N: all but this thread's N newest groups are complete.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::ptx::cp_async_wait_group(N);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace db::cuda::ptx
