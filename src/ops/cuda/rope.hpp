// Rotary position embedding on the GPU, rotate-half layout (spec §0), mirroring cpu/rope.hpp.
#pragma once
#include <cstdint>

#include "ops/cuda/device_buffer.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

// cos/sin tables [T, hd/2]: angles computed in double on the host (as cpu::RopeTable), stored
// as fp32; the rotation itself runs in fp32.
struct RopeTable {
  int seq_len = 0, head_dim = 0;
  DeviceBuffer<float> cos, sin;
  RopeTable() = default;
  RopeTable(int seq_len, int head_dim, double theta);
};

// A table for the (head_dim, theta) last asked for and at least the longest seq_len asked for
// since, rebuilt when a longer sequence, another head_dim or another theta is asked for: one
// per ops object, shared by its fp32 ops and its bf16 storage ops (cuda_ops.cpp).
class RopeCache {
 public:
  // Rebuilding waits for `stream` (queued kernels may still read the old table) and tells the
  // captured micro-batches, which hold its address, to capture again (op_stream.hpp).
  const RopeTable& table(int seq_len, int head_dim, double theta, cudaStream_t stream);

 private:
  RopeTable table_;
  double theta_ = 0;
};

// x is [B·T, heads, hd], rotated in place; inverse = true applies the transpose (backward).
// A thread rotates a pack of up to 16 bytes of pairs where hd/2 and the alignment of x allow
// (ops/cuda/packed_access.cuh), else one pair.
template <class T>
void rope_apply(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse,
                cudaStream_t stream = nullptr);
// q [B·T, q_heads, hd] and k [B·T, k_heads, hd] rotated in one launch, each as rope_apply.
template <class T>
void rope_apply_qk(T* q, int q_heads, T* k, int k_heads, const RopeTable& table, int64_t B,
                   int T_len, bool inverse, cudaStream_t stream = nullptr);
// rope_apply one pair per thread whatever the alignment: the twin the packed kernel is tested
// against (tests/gpu/cuda_packed_kernels_test.cpp).
template <class T>
void rope_apply_scalar(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse,
                       cudaStream_t stream = nullptr);

}  // namespace db::cuda
