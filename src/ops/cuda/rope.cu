#include <cmath>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/op_stream.hpp"
#include "ops/cuda/rope.hpp"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::grid_for;
using detail::to_float;

// One thread per rotated pair (row, head, i < hd/2).
template <class T>
__global__ void rope_kernel(T* __restrict__ x, const float* __restrict__ cos_table,
                            const float* __restrict__ sin_table, int64_t pairs, int T_len,
                            int heads, int half, float sign) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int i = int(p % half);
    const int64_t row_head = p / half;  // (row·heads + h)
    const int t = int((row_head / heads) % T_len);
    T* v = x + row_head * (2 * half);
    const float c = cos_table[int64_t(t) * half + i], s = sin_table[int64_t(t) * half + i];
    const float x1 = to_float(v[i]), x2 = to_float(v[i + half]);
    v[i] = from_float<T>(x1 * c - sign * x2 * s);
    v[i + half] = from_float<T>(x2 * c + sign * x1 * s);
  }
}
}  // namespace

RopeTable::RopeTable(int seq_len_, int head_dim_, double theta)
    : seq_len(seq_len_), head_dim(head_dim_) {
  const int half = head_dim / 2;
  std::vector<float> c(size_t(seq_len) * half), s(c.size());
  for (int t = 0; t < seq_len; ++t)
    for (int i = 0; i < half; ++i) {
      const double angle = t * std::pow(theta, -2.0 * i / head_dim);
      c[size_t(t) * half + i] = float(std::cos(angle));
      s[size_t(t) * half + i] = float(std::sin(angle));
    }
  cos.upload(c);
  sin.upload(s);
}

const RopeTable& RopeCache::table(int seq_len, int head_dim, double theta, cudaStream_t stream) {
  if (seq_len != table_.seq_len || head_dim != table_.head_dim || theta != theta_) {
    CUDA_CHECK(cudaStreamSynchronize(stream));
    table_ = RopeTable(seq_len, head_dim, theta);
    note_buffer_release();
    theta_ = theta;
  }
  return table_;
}

template <class T>
void rope_apply(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse,
                cudaStream_t stream) {
  CUDA_REQUIRE(T_len <= table.seq_len, "RoPE table shorter than the sequence");
  const int half = table.head_dim / 2;
  const int64_t pairs = B * T_len * heads * half;
  if (pairs <= 0) return;
  rope_kernel<<<grid_for(pairs, 256), 256, 0, stream>>>(
      x, table.cos.data(), table.sin.data(), pairs, T_len, heads, half, inverse ? -1.f : 1.f);
  CUDA_CHECK_LAUNCH();
}

template void rope_apply<float>(float*, const RopeTable&, int64_t, int, int, bool, cudaStream_t);
template void rope_apply<bf16>(bf16*, const RopeTable&, int64_t, int, int, bool, cudaStream_t);

}  // namespace db::cuda
