// Flash attention on bf16 tensor cores (doc/cuda.md "Flash attention"), FlashAttention-2
// structure with mma.sync.m16n8k16 (bf16 in, fp32 accumulate):
//   forward  one block per (64-query tile, head, batch); warp w owns queries 16w..16w+15 of the
//            tile and keeps their Q fragments in registers; K/V tiles of 64 keys go through
//            shared memory; S = Q·Kᵀ, online softmax in fp32 registers, O += P·V with P taken
//            straight from the S accumulators (no shared-memory round trip).
//   backward D = rowsum(dO ∘ O); one block per (64-key tile, kv head, batch) accumulates dK, dV
//            in registers over the query heads of its GQA group and the query tiles at or after
//            the key tile (no atomics); one block per (64-query tile, head, batch) accumulates
//            dQ. Both recompute P from lse, in 16 × 16 blocks.
// The streamed tiles are double-buffered: cp.async copies the next while the current one is
// computed. Fragments come from shared memory through ldmatrix. Every index map (fragments,
// ldmatrix rows, causal tiles, padding) is a function of flash_attention_tiling.hpp, tested on
// the CPU. Shared-memory tiles are bf16 [rows][HDP + 8]: the 8-element pad makes the 8 rows an
// ldmatrix phase reads hit distinct banks (row stride ≡ 4 or 12 words mod 32).
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/flash_attention.hpp"
#include "ops/cuda/flash_attention_tiling.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/ptx.cuh"

namespace db::cuda {
namespace {
using namespace flash;

// What every kernel needs to know about the shape.
struct Dims {
  int seq_len, heads, kv_heads, head_dim;
  int vector_width;  // elements per global load (flash::vector_width)
  float scale;       // 1/sqrt(head_dim)
};

template <int HDP>
constexpr int kStride = HDP + 8;  // shared row stride in bf16 elements
// One buffer of two 64-row tiles (K and V, or Q and dO).
template <int HDP>
constexpr int kKeyBuffer = kStride<HDP> * 2 * kTileCols;
// Padded head dims are whole mma k-steps and pairs of 8-column tiles (flash::padded_head_dim).
static_assert(kMmaK == 2 * kMmaN);

// ---- mma.sync and its fragments --------------------------------------------------------------
// d += a·b for one 16×8×16 tile; a, b, d in the layouts of flash::mma_*_element.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  ptx::mma_m16n8k16_bf16(d, a, b);
}

// Two bf16 in one register, `low` in the low half (the lower-numbered fragment element).
__device__ __forceinline__ uint32_t pack(bf16 low, bf16 high) {
  return uint32_t(__bfloat16_as_ushort(low)) | (uint32_t(__bfloat16_as_ushort(high)) << 16);
}
__device__ __forceinline__ uint32_t pack(float low, float high) {
  return pack(__float2bfloat16(low), __float2bfloat16(high));
}
// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 from `row` (this lane's row address).
template <bool kTranspose>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* row) {
  ptx::ldmatrix_x4<kTranspose>(r, row);
}

// A = the 16×16 block at `s` of a row-major shared tile: A(r, c) = s[r·stride + c].
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const bf16* s, int stride, int lane) {
  ldmatrix_x4<false>(a, s + ldmatrix_a_row(lane, stride));
}
// The B fragments of two adjacent 16×8 tiles (n 0–7 in b[0], 8–15 in b[1]), see
// flash::ldmatrix_b_*_row. "n-major": B(k, n) = s[n·stride + k]; "k-major": B(k, n) =
// s[k·stride + n].
__device__ __forceinline__ void load_b_pair_n_major(uint32_t (&b)[2][2], const bf16* s, int stride,
                                                    int lane) {
  uint32_t r[4];
  ldmatrix_x4<false>(r, s + ldmatrix_b_n_major_row(lane, stride));
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
__device__ __forceinline__ void load_b_pair_k_major(uint32_t (&b)[2][2], const bf16* s, int stride,
                                                    int lane) {
  uint32_t r[4];
  ldmatrix_x4<true>(r, s + ldmatrix_b_k_major_row(lane, stride));
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
// The 16×16 block held by two C tiles (columns 0–7 in `left`, 8–15 in `right`) as an A
// operand, rounded to bf16 (flash::c_tile_of_a_register).
__device__ __forceinline__ void a_from_c(uint32_t (&a)[4], const float (&left)[4],
                                         const float (&right)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float* tile = c_tile_of_a_register(r) == 0 ? left : right;
    const int e = c_element_of_a_register(r);
    a[r] = pack(tile[e], tile[e + 1]);
  }
}

// ---- global → shared --------------------------------------------------------------------------
// cp.async (sm_80+): a copy global → shared that does not pass through registers, so the next
// tile arrives while the current one is computed. BYTES (4 or 16) are copied when `copy`, else
// BYTES zeros are written (src-size 0; `src` is then not read). A thread's copies are complete
// after cp_async_commit() and cp_async_wait<N>() (all but its N newest groups), everyone's after
// a __syncthreads() that follows.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool copy) {
  ptx::cp_async<BYTES>(dst, src, copy ? BYTES : 0);
}
__device__ __forceinline__ void cp_async_commit() {
  ptx::cp_async_commit();
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  ptx::cp_async_wait<N>();
}

// Starts copying rows [row0, row0 + rows) of one head of a [B, T, heads, hd] tensor (`head`
// points at its element (b, 0, h, 0)) into a [rows][HDP + 8] shared tile; rows ≥ T and columns
// ≥ hd become zero (the head_dim padding). VEC elements per copy, VEC dividing hd
// (flash::vector_width); 2-byte elements (odd hd) are stored directly (cp.async has no 2-byte
// form).
template <int HDP, int VEC>
__device__ __forceinline__ void load_rows_vec(bf16* tile, const bf16* __restrict__ head, int row0,
                                              int rows, const Dims& d, int heads) {
  constexpr int kPerRow = HDP / VEC;
  for (int idx = threadIdx.x; idx < rows * kPerRow; idx += blockDim.x) {
    const int r = idx / kPerRow, e = (idx % kPerRow) * VEC;
    const int t = row0 + r;
    const bool inside = t < d.seq_len && e < d.head_dim;
    const bf16* src = inside ? head + int64_t(t) * heads * d.head_dim + e : head;
    bf16* dst = tile + r * kStride<HDP> + e;
    if constexpr (VEC == 1)
      *dst = inside ? *src : __ushort_as_bfloat16(0);
    else
      cp_async<VEC * sizeof(bf16)>(dst, src, inside);
  }
}
template <int HDP>
__device__ __forceinline__ void load_rows(bf16* tile, const bf16* __restrict__ head, int row0,
                                          int rows, const Dims& d, int heads) {
  if (d.vector_width == 8)
    load_rows_vec<HDP, 8>(tile, head, row0, rows, d, heads);
  else if (d.vector_width == 2)
    load_rows_vec<HDP, 2>(tile, head, row0, rows, d, heads);
  else
    load_rows_vec<HDP, 1>(tile, head, row0, rows, d, heads);
}

// Where head h of batch b starts in a [B, T, heads, hd] tensor.
__device__ __forceinline__ int64_t head_offset(int b, int h, const Dims& d, int heads) {
  return (int64_t(b) * d.seq_len * heads + h) * d.head_dim;
}

// Writes the 16×HDP accumulators of a warp (rows row0 + 0..15 of one head) as bf16, rows < T
// and columns < hd only; each C element times the factor of its row (0: row group, 1: +8).
template <int HDP>
__device__ __forceinline__ void store_rows(bf16* __restrict__ head, const float (&acc)[HDP / 8][4],
                                           int row0, const float (&row_factor)[2], const Dims& d,
                                           int heads, int lane) {
#pragma unroll
  for (int n = 0; n < HDP / 8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const FragmentIndex e = mma_c_element(lane, i);
      const int t = row0 + e.row, col = n * kMmaN + e.col;
      if (t < d.seq_len && col < d.head_dim)
        head[int64_t(t) * heads * d.head_dim + col] =
            __float2bfloat16(acc[n][i] * row_factor[i >> 1]);
    }
  }
}

// Causal load balance: the query tiles with the most keys start first.
__device__ __forceinline__ int reversed_block_x() {
  return int(gridDim.x) - 1 - int(blockIdx.x);
}

// ---- forward ------------------------------------------------------------------------------------
// Grid (ceil(T/64), B·H), 128 threads. Shared: Q [64][S], K [64][S], V [64][S], S = HDP + 8.
template <int HDP>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(bf16* __restrict__ o, float* __restrict__ lse, const bf16* __restrict__ q,
                         const bf16* __restrict__ k, const bf16* __restrict__ v, Dims d) {
  constexpr int S = kStride<HDP>;
  DB_DYNAMIC_SHARED(unsigned char, smem_bytes);
  bf16* Qs = reinterpret_cast<bf16*>(smem_bytes);
  bf16* key_buffers = Qs + kTileRows * S;  // two buffers of (K, V) [2][64][S]

  const int bh = blockIdx.y, b = bh / d.heads, h = bh % d.heads;
  const int kvh = h / (d.heads / d.kv_heads);
  const int q0 = reversed_block_x() * kTileRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row0 = q0 + warp * kMmaM;  // the warp's first query
  const bf16* k_head = k + head_offset(b, kvh, d, d.kv_heads);
  const bf16* v_head = v + head_offset(b, kvh, d, d.kv_heads);
  const int key_tiles = (key_end(q0, kTileRows, d.seq_len) + kTileCols - 1) / kTileCols;
  auto key_buffer = [&](int tile) { return key_buffers + (tile & 1) * kKeyBuffer<HDP>; };
  auto load_key_tile = [&](int tile) {  // K, V tile `tile` into buffer tile % 2
    bf16* buffer = key_buffer(tile);
    load_rows<HDP>(buffer, k_head, tile * kTileCols, kTileCols, d, d.kv_heads);
    load_rows<HDP>(buffer + kTileCols * S, v_head, tile * kTileCols, kTileCols, d, d.kv_heads);
  };

  load_rows<HDP>(Qs, q + head_offset(b, h, d, d.heads), q0, kTileRows, d, d.heads);
  load_key_tile(0);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  uint32_t q_frag[HDP / kMmaK][4];
#pragma unroll
  for (int kk = 0; kk < HDP / kMmaK; ++kk)
    load_a(q_frag[kk], Qs + warp * kMmaM * S + kk * kMmaK, S, lane);

  // This lane's two rows: group and group + 8 (flash::mma_c_element). Rows past T are clamped
  // to T − 1 for the mask, so they see key 0 and stay finite; they are never stored.
  int row_query[2];
#pragma unroll
  for (int half = 0; half < 2; ++half)
    row_query[half] = min(row0 + mma_c_element(lane, 2 * half).row, d.seq_len - 1);
  float acc[HDP / kMmaN][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this lane's partial sums; the quad's are added at the end

  for (int tile = 0; tile < key_tiles; ++tile) {
    // Tile + 1 is copied into the other buffer while this one is computed (its previous
    // contents, tile − 1, were released by the barrier that ended the previous iteration).
    if (tile + 1 < key_tiles) load_key_tile(tile + 1);
    cp_async_commit();   // possibly empty: one group per iteration
    cp_async_wait<1>();  // this thread's copies of `tile` are done …
    __syncthreads();     // … and everyone's
    const int k0 = tile * kTileCols;
    const bf16* Kt = key_buffer(tile);
    const bf16* Vt = Kt + kTileCols * S;

    // S = Q·Kᵀ: 16 rows × 64 keys per warp, 8 C tiles of 8 keys.
    float s[kTileCols / kMmaN][4] = {};
#pragma unroll
    for (int kk = 0; kk < HDP / kMmaK; ++kk) {
#pragma unroll
      for (int j = 0; j < kTileCols / kMmaN; j += 2) {
        uint32_t kb[2][2];
        load_b_pair_n_major(kb, Kt + j * kMmaN * S + kk * kMmaK, S, lane);
        mma_bf16(s[j], q_frag[kk], kb[0]);
        mma_bf16(s[j + 1], q_frag[kk], kb[1]);
      }
    }
    const bool unmasked = block_fully_visible(row0, kMmaM, k0, kTileCols, d.seq_len);
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kTileCols / kMmaN; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = k0 + j * kMmaN + mma_c_element(lane, i).col;
        const bool visible = unmasked || key_visible(row_query[i >> 1], key, d.seq_len);
        s[j][i] = visible ? s[j][i] * d.scale : -INFINITY;
        tile_max[i >> 1] = fmaxf(tile_max[i >> 1], s[j][i]);
      }
    }
    // Online softmax: the four lanes of a quad hold one row's 64 scores.
    float correction[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float m = tile_max[half];
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // Key 0 is visible to every (clamped) row in the first tile: row_max is finite after it.
      const float m_new = fmaxf(row_max[half], m);
      correction[half] = __expf(row_max[half] - m_new);  // 0 on the first tile
      row_max[half] = m_new;
      row_sum[half] *= correction[half];
    }
#pragma unroll
    for (int j = 0; j < kTileCols / kMmaN; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        s[j][i] = __expf(s[j][i] - row_max[i >> 1]);  // masked: exp(−inf) = 0
        row_sum[i >> 1] += s[j][i];
      }
    }
#pragma unroll
    for (int n = 0; n < HDP / kMmaN; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[n][i] *= correction[i >> 1];
    }

    // O += P·V, P (bf16) from the S accumulators, 16 keys per k-step.
#pragma unroll
    for (int kk = 0; kk < kTileCols / kMmaK; ++kk) {
      uint32_t p_frag[4];
      a_from_c(p_frag, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < HDP / kMmaN; n += 2) {
        uint32_t vb[2][2];
        load_b_pair_k_major(vb, Vt + kk * kMmaK * S + n * kMmaN, S, lane);
        mma_bf16(acc[n], p_frag, vb[0]);
        mma_bf16(acc[n + 1], p_frag, vb[1]);
      }
    }
    __syncthreads();  // buffer tile % 2 is no longer read: the next iteration refills it
  }

  float inverse_sum[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float l = row_sum[half];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inverse_sum[half] = 1.f / l;
    const int t = row0 + mma_c_element(lane, 2 * half).row;
    if ((lane & 3) == 0 && t < d.seq_len)
      lse[int64_t(bh) * d.seq_len + t] = row_max[half] + logf(l);
  }
  store_rows<HDP>(o + head_offset(b, h, d, d.heads), acc, row0, inverse_sum, d, d.heads, lane);
}

// ---- backward ---------------------------------------------------------------------------------
// D[b, h, t] = Σ_e dO·O in fp32 ([B, H, T], as lse), one warp per (b, t, h).
__global__ void flash_delta_kernel(float* __restrict__ delta, const bf16* __restrict__ d_o,
                                   const bf16* __restrict__ o, int64_t rows_heads, Dims d) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= rows_heads) return;  // whole warps exit together
  const bf16* a = d_o + warp * d.head_dim;
  const bf16* c = o + warp * d.head_dim;
  float sum = 0.f;
  for (int e = lane; e < d.head_dim; e += 32)
    sum += __bfloat162float(a[e]) * __bfloat162float(c[e]);
  sum = detail::warp_sum(sum);
  if (lane == 0) {
    const int h = int(warp % d.heads);
    const int64_t bt = warp / d.heads;  // b·T + t
    const int64_t b = bt / d.seq_len, t = bt % d.seq_len;
    delta[(b * d.heads + h) * d.seq_len + t] = sum;
  }
}

// dK, dV. Grid (ceil(T/64), B·H_kv), 128 threads; warp w owns keys 16w..16w+15 of the tile.
// The block walks the steps (query head g of the GQA group, query tile q0 ≥ the key tile), in
// that order. Shared: K, V [64][S] (the block's keys); Q, dO [64][S], lse and D [64] of a step,
// in two buffers (the next step is copied while this one is computed). Per 16 × 16 (keys ×
// queries) block, in registers:
//   Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ; Pᵀ = exp(scale·Sᵀ − lse); dSᵀ = Pᵀ ∘ (dPᵀ − D)·scale;
//   dV += Pᵀ·dO, dK += dSᵀ·Q (Pᵀ, dSᵀ as A operands straight from the accumulators).
template <int HDP>
__global__ void __launch_bounds__(kThreads)
    flash_dkdv_kernel(bf16* __restrict__ dk, bf16* __restrict__ dv, const bf16* __restrict__ d_o,
                      const float* __restrict__ lse, const float* __restrict__ delta,
                      const bf16* __restrict__ q, const bf16* __restrict__ k,
                      const bf16* __restrict__ v, Dims d) {
  constexpr int S = kStride<HDP>;
  DB_DYNAMIC_SHARED(unsigned char, smem_bytes);
  bf16* Ks = reinterpret_cast<bf16*>(smem_bytes);
  bf16* Vs = Ks + kTileRows * S;
  bf16* query_buffers = Vs + kTileRows * S;  // two buffers of (Q, dO) [2][64][S]
  // and two of (lse, D) [2][64]
  float* stat_buffers = reinterpret_cast<float*>(query_buffers + 2 * kKeyBuffer<HDP>);

  const int bkv = blockIdx.y, b = bkv / d.kv_heads, kvh = bkv % d.kv_heads;
  const int group = d.heads / d.kv_heads;
  const int k0 = blockIdx.x * kTileRows;  // block 0, first scheduled, sees the most queries
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int key0 = k0 + warp * kMmaM;  // the warp's first key
  const int first_q0 = first_query_tile(k0, kTileCols);
  const int tiles_per_head = (d.seq_len - first_q0 + kTileCols - 1) / kTileCols;
  const int steps = group * tiles_per_head;
  auto step_head = [&](int step) { return kvh * group + step / tiles_per_head; };
  auto step_q0 = [&](int step) { return first_q0 + (step % tiles_per_head) * kTileCols; };
  // Buffer step % 2: Q at q_tile, dO kTileCols rows after it, lse at stat, D kTileCols after.
  auto q_tile = [&](int step) { return query_buffers + (step & 1) * kKeyBuffer<HDP>; };
  auto stat = [&](int step) { return stat_buffers + (step & 1) * 2 * kTileCols; };
  auto load_step = [&](int step) {
    const int h = step_head(step), q0 = step_q0(step);
    load_rows<HDP>(q_tile(step), q + head_offset(b, h, d, d.heads), q0, kTileCols, d, d.heads);
    load_rows<HDP>(q_tile(step) + kTileCols * S, d_o + head_offset(b, h, d, d.heads), q0, kTileCols,
                   d, d.heads);
    const int64_t row = (int64_t(b) * d.heads + h) * d.seq_len + q0;  // [B, H, T]
    float* stats = stat(step);
    for (int r = threadIdx.x; r < kTileCols; r += blockDim.x) {  // zeros past T
      const bool inside = q0 + r < d.seq_len;
      cp_async<4>(stats + r, inside ? lse + row + r : lse, inside);
      cp_async<4>(stats + kTileCols + r, inside ? delta + row + r : delta, inside);
    }
  };

  load_rows<HDP>(Ks, k + head_offset(b, kvh, d, d.kv_heads), k0, kTileRows, d, d.kv_heads);
  load_rows<HDP>(Vs, v + head_offset(b, kvh, d, d.kv_heads), k0, kTileRows, d, d.kv_heads);
  if (steps > 0) load_step(0);
  cp_async_commit();
  const bf16* k_warp = Ks + warp * kMmaM * S;
  const bf16* v_warp = Vs + warp * kMmaM * S;

  float dk_acc[HDP / kMmaN][4] = {}, dv_acc[HDP / kMmaN][4] = {};
  for (int step = 0; step < steps; ++step) {
    // As in the forward: step + 1 is copied into the other buffer during this step.
    if (step + 1 < steps) load_step(step + 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int q0 = step_q0(step);
    const bf16* Qt = q_tile(step);
    const bf16* dOt = Qt + kTileCols * S;
    const float* lse_t = stat(step);
    const float* delta_t = lse_t + kTileCols;

    for (int qb = 0; qb < kTileCols; qb += kBlock) {
      const int query0 = q0 + qb;
      if (block_fully_masked(query0, kBlock, key0, d.seq_len)) continue;
      // Sᵀ and dPᵀ: 16 keys × 16 queries, two C tiles of 8 queries each.
      float st[2][4] = {}, dpt[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < HDP / kMmaK; ++kk) {
        uint32_t k_frag[4], v_frag[4];
        load_a(k_frag, k_warp + kk * kMmaK, S, lane);
        load_a(v_frag, v_warp + kk * kMmaK, S, lane);
        uint32_t q_b[2][2], do_b[2][2];  // the block's 16 queries: two tiles of 8
        load_b_pair_n_major(q_b, Qt + qb * S + kk * kMmaK, S, lane);
        load_b_pair_n_major(do_b, dOt + qb * S + kk * kMmaK, S, lane);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          mma_bf16(st[j], k_frag, q_b[j]);
          mma_bf16(dpt[j], v_frag, do_b[j]);
        }
      }
      // The block's queries are its columns here: (row, col) = (key, query).
      const bool unmasked = block_fully_visible(query0, kBlock, key0, kMmaM, d.seq_len);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const FragmentIndex e = mma_c_element(lane, i);
          const int r = qb + j * kMmaN + e.col;  // the query's row in the tile
          const bool visible = unmasked || key_visible(q0 + r, key0 + e.row, d.seq_len);
          const float p = visible ? __expf(st[j][i] * d.scale - lse_t[r]) : 0.f;
          st[j][i] = p;
          dpt[j][i] = p * (dpt[j][i] - delta_t[r]) * d.scale;
        }
      }
      uint32_t p_frag[4], ds_frag[4];
      a_from_c(p_frag, st[0], st[1]);
      a_from_c(ds_frag, dpt[0], dpt[1]);
#pragma unroll
      for (int n = 0; n < HDP / kMmaN; n += 2) {
        uint32_t do_b[2][2], q_b[2][2];
        load_b_pair_k_major(do_b, dOt + qb * S + n * kMmaN, S, lane);
        load_b_pair_k_major(q_b, Qt + qb * S + n * kMmaN, S, lane);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          mma_bf16(dv_acc[n + c], p_frag, do_b[c]);
          mma_bf16(dk_acc[n + c], ds_frag, q_b[c]);
        }
      }
    }
    __syncthreads();  // buffer step % 2 is no longer read: the next iteration refills it
  }
  const float one[2] = {1.f, 1.f};
  store_rows<HDP>(dk + head_offset(b, kvh, d, d.kv_heads), dk_acc, key0, one, d, d.kv_heads, lane);
  store_rows<HDP>(dv + head_offset(b, kvh, d, d.kv_heads), dv_acc, key0, one, d, d.kv_heads, lane);
}

// dQ. Grid (ceil(T/64), B·H), 128 threads; warp w owns queries 16w..16w+15 of the tile and
// keeps their Q and dO fragments in registers. Shared: Q, dO [64][S] (read once), K, V [64][S]
// in two buffers (the next key tile is copied while this one is computed).
// Per 16 × 16 (queries × keys) block: S = Q·Kᵀ, dP = dO·Vᵀ, P = exp(scale·S − lse),
// dS = P ∘ (dP − D)·scale, dQ += dS·K.
template <int HDP>
__global__ void __launch_bounds__(kThreads)
    flash_dq_kernel(bf16* __restrict__ dq, const bf16* __restrict__ d_o,
                    const float* __restrict__ lse, const float* __restrict__ delta,
                    const bf16* __restrict__ q, const bf16* __restrict__ k,
                    const bf16* __restrict__ v, Dims d) {
  constexpr int S = kStride<HDP>;
  DB_DYNAMIC_SHARED(unsigned char, smem_bytes);
  bf16* Qs = reinterpret_cast<bf16*>(smem_bytes);
  bf16* dOs = Qs + kTileRows * S;
  bf16* key_buffers = dOs + kTileRows * S;  // two buffers of (K, V) [2][64][S]

  const int bh = blockIdx.y, b = bh / d.heads, h = bh % d.heads;
  const int kvh = h / (d.heads / d.kv_heads);
  const int q0 = reversed_block_x() * kTileRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row0 = q0 + warp * kMmaM;
  const bf16* k_head = k + head_offset(b, kvh, d, d.kv_heads);
  const bf16* v_head = v + head_offset(b, kvh, d, d.kv_heads);

  const int key_tiles = (key_end(q0, kTileRows, d.seq_len) + kTileCols - 1) / kTileCols;
  auto key_buffer = [&](int tile) { return key_buffers + (tile & 1) * kKeyBuffer<HDP>; };
  auto load_key_tile = [&](int tile) {  // K, V tile `tile` into buffer tile % 2
    bf16* buffer = key_buffer(tile);
    load_rows<HDP>(buffer, k_head, tile * kTileCols, kTileCols, d, d.kv_heads);
    load_rows<HDP>(buffer + kTileCols * S, v_head, tile * kTileCols, kTileCols, d, d.kv_heads);
  };

  load_rows<HDP>(Qs, q + head_offset(b, h, d, d.heads), q0, kTileRows, d, d.heads);
  load_rows<HDP>(dOs, d_o + head_offset(b, h, d, d.heads), q0, kTileRows, d, d.heads);
  load_key_tile(0);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  uint32_t q_frag[HDP / kMmaK][4], do_frag[HDP / kMmaK][4];
#pragma unroll
  for (int kk = 0; kk < HDP / kMmaK; ++kk) {
    load_a(q_frag[kk], Qs + warp * kMmaM * S + kk * kMmaK, S, lane);
    load_a(do_frag[kk], dOs + warp * kMmaM * S + kk * kMmaK, S, lane);
  }
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int t = row0 + mma_c_element(lane, 2 * half).row;
    const int64_t at = int64_t(bh) * d.seq_len + t;
    row_lse[half] = t < d.seq_len ? lse[at] : 0.f;
    row_delta[half] = t < d.seq_len ? delta[at] : 0.f;
  }

  float dq_acc[HDP / kMmaN][4] = {};
  for (int tile = 0; tile < key_tiles; ++tile) {
    // As in the forward: tile + 1 is copied into the other buffer during this tile.
    if (tile + 1 < key_tiles) load_key_tile(tile + 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int k0 = tile * kTileCols;
    const bf16* Kt = key_buffer(tile);
    const bf16* Vt = Kt + kTileCols * S;

    for (int kb = 0; kb < kTileCols; kb += kBlock) {
      const int key_first = k0 + kb;
      if (block_fully_masked(row0, kMmaM, key_first, d.seq_len)) continue;
      float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
      for (int kk = 0; kk < HDP / kMmaK; ++kk) {
        uint32_t k_b[2][2], v_b[2][2];  // the block's 16 keys: two tiles of 8
        load_b_pair_n_major(k_b, Kt + kb * S + kk * kMmaK, S, lane);
        load_b_pair_n_major(v_b, Vt + kb * S + kk * kMmaK, S, lane);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          mma_bf16(s[j], q_frag[kk], k_b[j]);
          mma_bf16(dp[j], do_frag[kk], v_b[j]);
        }
      }
      const bool unmasked = block_fully_visible(row0, kMmaM, key_first, kBlock, d.seq_len);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const FragmentIndex e = mma_c_element(lane, i);
          const int key = key_first + j * kMmaN + e.col;
          const bool visible = unmasked || key_visible(row0 + e.row, key, d.seq_len);
          const float p = visible ? __expf(s[j][i] * d.scale - row_lse[i >> 1]) : 0.f;
          dp[j][i] = p * (dp[j][i] - row_delta[i >> 1]) * d.scale;
        }
      }
      uint32_t ds_frag[4];
      a_from_c(ds_frag, dp[0], dp[1]);
#pragma unroll
      for (int n = 0; n < HDP / kMmaN; n += 2) {
        uint32_t k_b[2][2];
        load_b_pair_k_major(k_b, Kt + kb * S + n * kMmaN, S, lane);
        mma_bf16(dq_acc[n], ds_frag, k_b[0]);
        mma_bf16(dq_acc[n + 1], ds_frag, k_b[1]);
      }
    }
    __syncthreads();  // buffer tile % 2 is no longer read: the next iteration refills it
  }
  const float one[2] = {1.f, 1.f};
  store_rows<HDP>(dq + head_offset(b, h, d, d.heads), dq_acc, row0, one, d, d.heads, lane);
}

// ---- host side ----------------------------------------------------------------------------------
template <class Kernel>
void allow_shared_memory(Kernel kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

template <class... Pointers>
Dims dims_for(const AttentionShape& s, const Pointers*... tensors) {
  const uint64_t address_bits = (uint64_t(reinterpret_cast<uintptr_t>(tensors)) | ...);
  return {s.seq_len,
          s.heads,
          s.kv_heads,
          s.head_dim,
          vector_width(s.head_dim, address_bits),
          float(1.0 / std::sqrt(double(s.head_dim)))};
}

unsigned tiles(int seq_len) {
  return unsigned((seq_len + kTileRows - 1) / kTileRows);
}

template <int HDP>
void forward_launch(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                    const AttentionShape& s, cudaStream_t stream) {
  // Q and two buffers of K, V.
  const size_t smem = sizeof(bf16) * (kTileRows + 4 * kTileCols) * kStride<HDP>;
  allow_shared_memory(flash_forward_kernel<HDP>, smem);
  const dim3 grid(tiles(s.seq_len), unsigned(s.batch * s.heads));
  launch(flash_forward_kernel<HDP>, grid, kThreads, smem, stream, o, lse, q, k, v,
         dims_for(s, q, k, v));
  CUDA_CHECK_LAUNCH();
}

template <int HDP>
void backward_launch(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o, const float* lse,
                     const bf16* q, const bf16* k, const bf16* v, const AttentionShape& s,
                     cudaStream_t stream) {
  const Dims d = dims_for(s, d_o, q, k, v);
  const int64_t rows_heads = s.batch * s.seq_len * s.heads;
  float* delta = nullptr;
  CUDA_CHECK(malloc_async(&delta, size_t(rows_heads) * sizeof(float), stream));
  launch(flash_delta_kernel, unsigned((rows_heads * 32 + 255) / 256), 256, 0, stream, delta, d_o, o,
         rows_heads, d);
  CUDA_CHECK_LAUNCH();

  // dK/dV: K, V and two buffers of Q, dO, lse, D; dQ: Q, dO and two buffers of K, V.
  const size_t tile_bytes = sizeof(bf16) * (2 * kTileRows + 4 * kTileCols) * kStride<HDP>;
  const size_t smem_kv = tile_bytes + sizeof(float) * 4 * kTileCols;
  allow_shared_memory(flash_dkdv_kernel<HDP>, smem_kv);
  const dim3 grid_kv(tiles(s.seq_len), unsigned(s.batch * s.kv_heads));
  launch(flash_dkdv_kernel<HDP>, grid_kv, kThreads, smem_kv, stream, dk, dv, d_o, lse, delta, q, k,
         v, d);
  CUDA_CHECK_LAUNCH();

  allow_shared_memory(flash_dq_kernel<HDP>, tile_bytes);
  const dim3 grid_q(tiles(s.seq_len), unsigned(s.batch * s.heads));
  launch(flash_dq_kernel<HDP>, grid_q, kThreads, tile_bytes, stream, dq, d_o, lse, delta, q, k, v,
         d);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(delta, stream));
}

void require_supported(const AttentionShape& s) {
  CUDA_REQUIRE(flash_attention_supports(s),
               "flash attention: unsupported shape (head_dim " + std::to_string(s.head_dim) +
                   ", heads " + std::to_string(s.heads) + ", kv_heads " +
                   std::to_string(s.kv_heads) + "; needs head_dim 1..128, heads % kv_heads == 0)");
}
}  // namespace

bool flash_attention_supports(const AttentionShape& s) {
  return padded_head_dim(s.head_dim) != 0 && s.heads >= 1 && s.kv_heads >= 1 &&
         s.heads % s.kv_heads == 0 && s.batch >= 0 && s.seq_len >= 0 && s.batch * s.heads < 65536;
}

void flash_attention_forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             const AttentionShape& s, cudaStream_t stream) {
  require_supported(s);
  if (s.batch == 0 || s.seq_len == 0) return;
  switch (padded_head_dim(s.head_dim)) {
    case 64:
      return forward_launch<64>(o, lse, q, k, v, s, stream);
    case 80:
      return forward_launch<80>(o, lse, q, k, v, s, stream);
    default:
      return forward_launch<128>(o, lse, q, k, v, s, stream);
  }
}

void flash_attention_backward(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v,
                              const AttentionShape& s, cudaStream_t stream) {
  require_supported(s);
  if (s.batch == 0 || s.seq_len == 0) return;
  switch (padded_head_dim(s.head_dim)) {
    case 64:
      return backward_launch<64>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
    case 80:
      return backward_launch<80>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
    default:
      return backward_launch<128>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
  }
}

}  // namespace db::cuda
