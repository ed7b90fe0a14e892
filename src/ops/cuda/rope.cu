#include <cmath>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/op_stream.hpp"
#include "ops/cuda/packed_access.cuh"
#include "ops/cuda/rope.hpp"
#include "ops/cuda/rope_rotation.cuh"

namespace db::cuda {
namespace {
using detail::grid_for;
using detail::load_pack;
using detail::pack_width;
using detail::rope_first;
using detail::rope_second;
using detail::store_pack;

constexpr int kThreads = 256;

// One thread per W consecutive pairs (row, head, i .. i + W − 1) of q, then of k: a unit u below
// q_units is q's, the others k's (k may be null with no units). W divides hd/2, and with every
// row starting on a multiple of W values the packs are aligned when the tensors and tables are
// (rope_units_width); W = 1 is one pair per thread.
template <int W, class T>
__global__ void rope_kernel(T* __restrict__ q, int q_heads, int64_t q_units, T* __restrict__ k,
                            int k_heads, int64_t units, const float* __restrict__ cos_table,
                            const float* __restrict__ sin_table, int T_len, int half, float sign) {
  const int packs_per_head = half / W;
  DB_GRID_STRIDE_LOOP(u, units) {
    const bool in_q = u < q_units;
    const int64_t unit = in_q ? u : u - q_units;
    const int heads = in_q ? q_heads : k_heads;
    const int i = int(unit % packs_per_head) * W;
    const int64_t row_head = unit / packs_per_head;  // (row·heads + h)
    const int t = int((row_head / heads) % T_len);
    T* v = (in_q ? q : k) + row_head * (2 * half);
    float c[W], s[W], x1[W], x2[W], y1[W], y2[W];
    load_pack<W>(cos_table + int64_t(t) * half + i, c);
    load_pack<W>(sin_table + int64_t(t) * half + i, s);
    load_pack<W>(v + i, x1);
    load_pack<W>(v + i + half, x2);
#pragma unroll
    for (int e = 0; e < W; ++e) {
      y1[e] = rope_first(x1[e], x2[e], c[e], s[e], sign);
      y2[e] = rope_second(x1[e], x2[e], c[e], s[e], sign);
    }
    store_pack<W>(v + i, y1);
    store_pack<W>(v + i + half, y2);
  }
}

template <int W, class T>
void rope_launch(T* q, int q_heads, T* k, int k_heads, const RopeTable& table, int64_t B, int T_len,
                 bool inverse, cudaStream_t stream) {
  const int half = table.head_dim / 2;
  const int64_t q_units = B * T_len * q_heads * (half / W);
  const int64_t units = q_units + (k ? B * T_len * k_heads * (half / W) : 0);
  if (units <= 0) return;
  launch(rope_kernel<W, T>, grid_for(units, kThreads), kThreads, 0, stream, q, q_heads, q_units, k,
         k_heads, units, table.cos.data(), table.sin.data(), T_len, half, inverse ? -1.f : 1.f);
  CUDA_CHECK_LAUNCH();
}

bool aligned_to(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The widest pack of pairs (at most 16 bytes of T) that divides hd/2 and to which q, k and the
// tables are aligned; 1 when none is.
template <class T>
int rope_pack_width(const T* q, const T* k, const RopeTable& table) {
  const int half = table.head_dim / 2;
  for (int w = pack_width<T>(); w > 1; w /= 2)
    if (half % w == 0 && aligned_to(q, w * sizeof(T)) && aligned_to(k, w * sizeof(T)) &&
        aligned_to(table.cos.data(), w * sizeof(float)) &&
        aligned_to(table.sin.data(), w * sizeof(float)))
      return w;
  return 1;
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
  // A longer table serves a shorter sequence (rows are positions): rebuilding for every change of
  // length would synchronise, and end a capture, each time lengths alternate.
  if (seq_len > table_.seq_len || head_dim != table_.head_dim || theta != theta_) {
    CUDA_CHECK(cudaStreamSynchronize(stream));
    table_ = RopeTable(seq_len, head_dim, theta);
    note_buffer_release();
    theta_ = theta;
  }
  return table_;
}

template <class T>
void rope_apply_qk(T* q, int q_heads, T* k, int k_heads, const RopeTable& table, int64_t B,
                   int T_len, bool inverse, cudaStream_t stream) {
  CUDA_REQUIRE(T_len <= table.seq_len, "RoPE table shorter than the sequence");
  switch (rope_pack_width(q, k, table)) {
    case 8:
      return rope_launch<8>(q, q_heads, k, k_heads, table, B, T_len, inverse, stream);
    case 4:
      return rope_launch<4>(q, q_heads, k, k_heads, table, B, T_len, inverse, stream);
    case 2:
      return rope_launch<2>(q, q_heads, k, k_heads, table, B, T_len, inverse, stream);
    default:
      return rope_launch<1>(q, q_heads, k, k_heads, table, B, T_len, inverse, stream);
  }
}

template <class T>
void rope_apply(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse,
                cudaStream_t stream) {
  rope_apply_qk(x, heads, static_cast<T*>(nullptr), 0, table, B, T_len, inverse, stream);
}

template <class T>
void rope_apply_scalar(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse,
                       cudaStream_t stream) {
  CUDA_REQUIRE(T_len <= table.seq_len, "RoPE table shorter than the sequence");
  rope_launch<1>(x, heads, static_cast<T*>(nullptr), 0, table, B, T_len, inverse, stream);
}

#define DB_INSTANTIATE(T)                                                                   \
  template void rope_apply<T>(T*, const RopeTable&, int64_t, int, int, bool, cudaStream_t); \
  template void rope_apply_qk<T>(T*, int, T*, int, const RopeTable&, int64_t, int, bool,    \
                                 cudaStream_t);                                             \
  template void rope_apply_scalar<T>(T*, const RopeTable&, int64_t, int, int, bool, cudaStream_t);
DB_INSTANTIATE(float)
DB_INSTANTIATE(bf16)
#undef DB_INSTANTIATE

}  // namespace db::cuda
