// The index arithmetic of the tensor-core flash attention (flash_attention.cu), as plain
// __host__ __device__ functions so that the CPU tests (tests/ops/flash_attention_tiling_test.cpp)
// cover exactly what the kernels compute: which element of an mma.sync m16n8k16 tile each lane
// holds, which tiles the causal loops visit or skip, the padded head_dim and the vector width of
// the global loads. No CUDA types: the header compiles as C++ without nvcc.
#pragma once
#include <cstdint>

#include "core/host_device.hpp"

namespace db::cuda::flash {

// ---- Tiles ------------------------------------------------------------------------------------
constexpr int kWarps = 4;  // per block; each warp owns 16 rows (one mma tile height)
constexpr int kThreads = 32 * kWarps;
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;  // mma.sync.m16n8k16
constexpr int kTileRows = kWarps * kMmaM;         // 64 query rows (forward, dQ) or keys (dK/dV)
constexpr int kTileCols = 64;                     // keys (forward, dQ) or query rows (dK/dV)
// The backward works on 16 × 16 blocks of a tile (one mma k-step of P or dS).
constexpr int kBlock = 16;

// head_dim padded inside the kernels (the padding is zero-filled in shared memory, so it adds
// nothing to any product): one compiled kernel per padded size; 0 = unsupported.
DB_HD int padded_head_dim(int head_dim) {
  if (head_dim < 1) return 0;
  if (head_dim <= 64) return 64;
  if (head_dim <= 80) return 80;
  if (head_dim <= 128) return 128;
  return 0;
}

// Elements per global load (8 = 16 bytes, 2 = 4 bytes, 1 = 2 bytes): the widest that divides
// head_dim (a vector then never straddles the end of a row) and whose byte size divides the
// address bits of every tensor the kernel reads (OR of the base addresses).
DB_HD int vector_width(int head_dim, uint64_t address_bits) {
  if (head_dim % 8 == 0 && address_bits % 16 == 0) return 8;
  if (head_dim % 2 == 0 && address_bits % 4 == 0) return 2;
  return 1;
}

// ---- mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 fragments ---------------------------
// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type". With
// group = lane / 4 and quad = lane % 4:
//   A (16×16, row-major), 8 bf16 a0..a7 in 4 registers (a0,a1 | a2,a3 | a4,a5 | a6,a7):
//     row = group for i ∈ {0,1,4,5}, group + 8 otherwise; col = 2·quad + (i & 1) + 8·(i ≥ 4)
//   B (16×8, "col": indexed (k, n)), 4 bf16 b0..b3 in 2 registers:
//     k = 2·quad + (i & 1) + 8·(i ≥ 2); n = group
//   C, D (16×8 fp32), 4 floats c0..c3:
//     row = group + 8·(i ≥ 2); col = 2·quad + (i & 1)
// Within a register the lower-numbered element is the low 16 bits.
struct FragmentIndex {
  int row, col;  // for B: row = k, col = n
};

DB_HD FragmentIndex mma_a_element(int lane, int i) {
  const int group = lane >> 2, quad = lane & 3;
  const bool upper_rows = (i & 2) != 0;  // i ∈ {2,3,6,7}
  return {group + (upper_rows ? 8 : 0), 2 * quad + (i & 1) + (i >= 4 ? 8 : 0)};
}
DB_HD FragmentIndex mma_b_element(int lane, int i) {
  const int group = lane >> 2, quad = lane & 3;
  return {2 * quad + (i & 1) + (i >= 2 ? 8 : 0), group};
}
DB_HD FragmentIndex mma_c_element(int lane, int i) {
  const int group = lane >> 2, quad = lane & 3;
  return {group + (i >= 2 ? 8 : 0), 2 * quad + (i & 1)};
}
// The first element of A register r (elements 2r, 2r+1 — the second is one column right).
DB_HD FragmentIndex mma_a_register(int lane, int r) {
  return mma_a_element(lane, 2 * r);
}
// The first element of B register r (elements 2r, 2r+1 — the second is one k further).
DB_HD FragmentIndex mma_b_register(int lane, int r) {
  return mma_b_element(lane, 2 * r);
}

// Fragments are loaded from shared memory by ldmatrix.sync.aligned.m8n8.x4(.trans).b16 (PTX
// ISA "Warp-level matrix load instruction: ldmatrix"): lanes 8m..8m+7 give the addresses of rows
// 0..7 of 8×8 matrix m (16 contiguous bytes each); lane L receives in register m the elements
// (L/4, 2·(L%4)) and (L/4, 2·(L%4) + 1) of matrix m, or with .trans (2·(L%4), L/4) and
// (2·(L%4) + 1, L/4). The functions give the offset (elements) of the row a lane addresses in a
// shared tile of row stride `stride`, for the three operand layouts of the kernels:
//   A(row, col) = tile[row·stride + col]: one 16×16 A fragment, register m = matrix m
//     (Q, K, V, dO rows);
//   B(k, n) = tile[n·stride + k], "n-major", no .trans: the B fragments of two adjacent 16×8
//     tiles (n 0–7, 8–15), register m = b[m / 2][m % 2] (Kᵀ in Q·Kᵀ, Vᵀ in dO·Vᵀ, Qᵀ in K·Qᵀ);
//   B(k, n) = tile[k·stride + n], "k-major", .trans: the same two B fragments
//     (V in P·V, K in dS·K, Q and dO in dSᵀ·Q and Pᵀ·dO).
DB_HD int ldmatrix_a_row(int lane, int stride) {
  const int matrix = lane >> 3, row = lane & 7;  // register m: rows 8·(m%2)…, cols 8·(m/2)…
  return (row + 8 * (matrix & 1)) * stride + 8 * (matrix >> 1);
}
DB_HD int ldmatrix_b_n_major_row(int lane, int stride) {
  const int matrix = lane >> 3, row = lane & 7;  // b[t][r]: n 8t…, k 8r…
  return (row + 8 * (matrix >> 1)) * stride + 8 * (matrix & 1);
}
DB_HD int ldmatrix_b_k_major_row(int lane, int stride) {
  const int matrix = lane >> 3, row = lane & 7;  // b[t][r]: k 8r…, n 8t…
  return (row + 8 * (matrix & 1)) * stride + 8 * (matrix >> 1);
}

// FlashAttention-2's register reuse: the accumulators of two adjacent 16×8 C tiles (columns
// 0–7 and 8–15 of a 16×16 block) hold, lane by lane, exactly the elements of that block as an A
// operand. A register r is packed from C tile `c_tile_of_a_register(r)`, elements
// `c_element_of_a_register(r)` and the one after it.
DB_HD int c_tile_of_a_register(int r) {
  return r >> 1;
}
DB_HD int c_element_of_a_register(int r) {
  return (r & 1) * 2;
}

// ---- Causal tiles ---------------------------------------------------------------------------
// Whether query position `query` attends to key position `key` (causal, inside the sequence).
DB_HD bool key_visible(int query, int key, int seq_len) {
  return key <= query && query < seq_len;
}
// Every (query, key) of the block [q_first, q_first + q_count) × [k_first, k_first + k_count)
// is visible: the kernels then skip the mask.
DB_HD bool block_fully_visible(int q_first, int q_count, int k_first, int k_count, int seq_len) {
  return k_first + k_count - 1 <= q_first && q_first + q_count <= seq_len;
}
// No (query, key) of the block [q_first, q_first + q_count) × [k_first, …) is visible, whatever
// its width (its first key is the one the most queries see): the kernels skip the block.
DB_HD bool block_fully_masked(int q_first, int q_count, int k_first, int seq_len) {
  const int q_last = q_first + q_count - 1;
  return q_last < k_first || q_first >= seq_len || k_first >= seq_len;
}
// One past the last key that the queries [q_first, q_first + q_count) see: the forward and dQ
// loops over key tiles stop there.
DB_HD int key_end(int q_first, int q_count, int seq_len) {
  const int end = q_first + q_count;
  return end < seq_len ? end : seq_len;
}
// The first query tile (of tile_rows rows) holding a query that sees key `k_first`: the dK/dV
// loop over query tiles starts there.
DB_HD int first_query_tile(int k_first, int tile_rows) {
  return (k_first / tile_rows) * tile_rows;
}

}  // namespace db::cuda::flash
