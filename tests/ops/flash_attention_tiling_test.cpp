// The index arithmetic of the tensor-core flash attention (src/ops/cuda/flash_attention_tiling.hpp)
// on the CPU — the part of the kernels that can be checked without a GPU: the mma.sync m16n8k16
// fragment maps cover their tiles exactly once, the ldmatrix row addresses the kernels give put
// the intended operand element into every register half, the S accumulators
// re-read as the P operand are the right elements, and the causal tile loops and block skips never
// drop a visible (query, key) pair nor skip the mask where one is needed.
#define BOOST_TEST_MODULE flash_attention_tiling
#define BOOST_TEST_DYN_LINK
#include "ops/cuda/flash_attention_tiling.hpp"

#include <boost/test/unit_test.hpp>
#include <vector>

using namespace db::cuda::flash;

namespace {

// Calls visit(lane, i, index) for every element of a fragment with `per_lane` elements.
template <class Map>
std::vector<int> coverage(Map map, int per_lane, int rows, int cols) {
  std::vector<int> hits(size_t(rows) * cols, 0);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < per_lane; ++i) {
      const FragmentIndex e = map(lane, i);
      BOOST_REQUIRE(e.row >= 0 && e.row < rows && e.col >= 0 && e.col < cols);
      ++hits[size_t(e.row) * cols + e.col];
    }
  return hits;
}

// The (query, key) pairs a loop computed, as a T × T grid; counts the visible ones.
struct Seen {
  int T;
  std::vector<char> grid;
  explicit Seen(int seq_len) : T(seq_len), grid(size_t(seq_len) * seq_len, 0) {}
  void block(int q_first, int q_count, int k_first, int k_count) {
    for (int qi = q_first; qi < q_first + q_count; ++qi)
      for (int kj = k_first; kj < k_first + k_count; ++kj)
        if (key_visible(qi, kj, T)) grid[size_t(qi) * T + kj] = 1;
  }
  size_t visible() const {
    size_t n = 0;
    for (char c : grid) n += c;
    return n;
  }
};

bool all_once(const std::vector<int>& hits) {
  for (int h : hits)
    if (h != 1) return false;
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fragment_maps_cover_their_tiles_exactly_once) {
  BOOST_TEST(all_once(coverage(mma_a_element, 8, 16, 16)));  // A 16×16, 8 per lane
  BOOST_TEST(all_once(coverage(mma_b_element, 4, 16, 8)));   // B 16×8 (k, n), 4 per lane
  BOOST_TEST(all_once(coverage(mma_c_element, 4, 16, 8)));   // C 16×8, 4 per lane
}

BOOST_AUTO_TEST_CASE(fragment_maps_follow_the_ptx_table_for_a_few_lanes) {
  // Spot values read off the PTX ISA figures for m16n8k16 (.bf16 A/B, .f32 C).
  BOOST_TEST(mma_a_element(0, 0).row == 0);
  BOOST_TEST(mma_a_element(0, 0).col == 0);
  BOOST_TEST(mma_a_element(5, 3).row == 9);  // lane 5: group 1, quad 1; a3 → row group + 8
  BOOST_TEST(mma_a_element(5, 3).col == 3);
  BOOST_TEST(mma_a_element(31, 7).row == 15);
  BOOST_TEST(mma_a_element(31, 7).col == 15);
  BOOST_TEST(mma_b_element(6, 2).row == 12);  // k = 2·quad + 8 for b2; n = group
  BOOST_TEST(mma_b_element(6, 2).col == 1);
  BOOST_TEST(mma_c_element(7, 3).row == 9);
  BOOST_TEST(mma_c_element(7, 3).col == 7);
}

BOOST_AUTO_TEST_CASE(register_pairs_are_adjacent_elements) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r) {  // A: the pair is one row, adjacent columns
      const FragmentIndex first = mma_a_element(lane, 2 * r),
                          second = mma_a_element(lane, 2 * r + 1);
      BOOST_TEST(
          (first.row == mma_a_register(lane, r).row && first.col == mma_a_register(lane, r).col));
      BOOST_TEST((second.row == first.row && second.col == first.col + 1));
    }
    for (int r = 0; r < 2; ++r) {  // B: the pair is one column n, adjacent k
      const FragmentIndex first = mma_b_element(lane, 2 * r),
                          second = mma_b_element(lane, 2 * r + 1);
      BOOST_TEST(
          (first.row == mma_b_register(lane, r).row && first.col == mma_b_register(lane, r).col));
      BOOST_TEST((second.col == first.col && second.row == first.row + 1));
    }
  }
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).b16 as the PTX ISA defines it: lanes 8m..8m+7 give the
// row addresses (`row_offset` of their lane) of 8×8 matrix m; lane L receives in register m the
// elements (L/4, 2·(L%4) + half) of matrix m, or with .trans (2·(L%4) + half, L/4). Returns the
// tile offset that lands in half `half` of register `m` of lane `lane`.
template <class RowOffset>
int ldmatrix_source(RowOffset row_offset, int stride, bool transpose, int lane, int m, int half) {
  const int row = transpose ? 2 * (lane % 4) + half : lane / 4;
  const int col = transpose ? lane / 4 : 2 * (lane % 4) + half;
  return row_offset(8 * m + row, stride) + col;
}

BOOST_AUTO_TEST_CASE(ldmatrix_loads_put_the_intended_operand_element_in_every_register_half) {
  for (int stride : {72, 88, 136}) {  // the kernels' strides HDP + 8
    for (int lane = 0; lane < 32; ++lane) {
      const int row = ldmatrix_a_row(lane, stride);  // rows start 16-byte aligned
      BOOST_TEST(row % 8 == 0);
      BOOST_TEST(ldmatrix_b_n_major_row(lane, stride) % 8 == 0);
      BOOST_TEST(ldmatrix_b_k_major_row(lane, stride) % 8 == 0);
      for (int m = 0; m < 4; ++m)
        for (int half = 0; half < 2; ++half) {
          // A(row, col) = tile[row·stride + col]: register m holds A elements 2m, 2m+1.
          const FragmentIndex a = mma_a_element(lane, 2 * m + half);
          BOOST_TEST(ldmatrix_source(ldmatrix_a_row, stride, false, lane, m, half) ==
                     a.row * stride + a.col);
          // Two B tiles: register m holds b[m / 2][m % 2], i.e. elements 2·(m%2) + half of the
          // tile whose n starts at 8·(m/2).
          const FragmentIndex b = mma_b_element(lane, 2 * (m % 2) + half);
          const int n = b.col + kMmaN * (m / 2), k = b.row;
          BOOST_TEST(ldmatrix_source(ldmatrix_b_n_major_row, stride, false, lane, m, half) ==
                     n * stride + k);
          BOOST_TEST(ldmatrix_source(ldmatrix_b_k_major_row, stride, true, lane, m, half) ==
                     k * stride + n);
        }
    }
  }
}

BOOST_AUTO_TEST_CASE(accumulators_of_two_tiles_are_the_a_operand_of_their_16x16_block) {
  // a_from_c packs A register r from C tile c_tile_of_a_register(r) (columns 0–7 or 8–15),
  // elements c_element_of_a_register(r) and the next: they must be A's elements 2r, 2r+1.
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < 4; ++r)
      for (int half = 0; half < 2; ++half) {
        const int tile = c_tile_of_a_register(r);
        const FragmentIndex c = mma_c_element(lane, c_element_of_a_register(r) + half);
        const FragmentIndex a = mma_a_element(lane, 2 * r + half);
        BOOST_TEST(c.row == a.row);
        BOOST_TEST(c.col + kMmaN * tile == a.col);
      }
}

BOOST_AUTO_TEST_CASE(padded_head_dim_covers_every_supported_head_dim_in_mma_steps) {
  for (int hd = 1; hd <= 128; ++hd) {
    const int padded = padded_head_dim(hd);
    BOOST_TEST(padded >= hd);
    BOOST_TEST(padded % kMmaK == 0);
    BOOST_TEST(padded <= 128);
  }
  for (int hd : {40, 50, 56, 60, 64}) BOOST_TEST(padded_head_dim(hd) == 64);
  for (int hd : {70, 76}) BOOST_TEST(padded_head_dim(hd) == 80);
  BOOST_TEST(padded_head_dim(128) == 128);
  BOOST_TEST(padded_head_dim(0) == 0);
  BOOST_TEST(padded_head_dim(129) == 0);
}

BOOST_AUTO_TEST_CASE(vector_width_divides_head_dim_and_respects_alignment) {
  for (int hd = 1; hd <= 128; ++hd)
    for (uint64_t address : {0ull, 2ull, 4ull, 8ull, 16ull, 256ull, 258ull, 260ull}) {
      const int w = vector_width(hd, address);
      BOOST_TEST(hd % w == 0);
      BOOST_TEST(address % (2 * w) == 0);
    }
  BOOST_TEST(vector_width(64, 256) == 8);
  BOOST_TEST(vector_width(76, 256) == 2);  // 76 = 4·19: no 8-element vectors per row
  BOOST_TEST(vector_width(64, 260) == 2);  // a base only 4-byte aligned
  BOOST_TEST(vector_width(63, 256) == 1);
}

BOOST_AUTO_TEST_CASE(block_classification_agrees_with_the_causal_mask) {
  const int T = 40;
  for (int q_first = 0; q_first < T + 20; ++q_first)
    for (int k_first = 0; k_first < T + 20; ++k_first)
      for (int count : {1, 8, 16, 64}) {
        bool any = false, all = true;
        for (int qi = q_first; qi < q_first + count; ++qi)
          for (int kj = k_first; kj < k_first + count; ++kj) {
            const bool visible = key_visible(qi, kj, T);
            any = any || visible;
            all = all && visible;
          }
        // Skipping the mask needs every pair visible; skipping the block needs none.
        if (block_fully_visible(q_first, count, k_first, count, T)) BOOST_TEST(all);
        if (block_fully_masked(q_first, count, k_first, T)) BOOST_TEST(!any);
        // And the classification is tight where the kernels rely on it to save work: a block of
        // only visible pairs inside the sequence is recognised as such.
        if (all && q_first + count <= T)
          BOOST_TEST(block_fully_visible(q_first, count, k_first, count, T));
        if (!any) BOOST_TEST(block_fully_masked(q_first, count, k_first, T));
      }
}

// The dQ loop: query tile q0 visits key tiles k0 = 0, 64, ... < key_end(q0, 64, T), and each
// warp skips its 16 queries × 16 keys blocks classified fully masked. (The forward visits the
// same key tiles and skips no block, only the mask.)
BOOST_AUTO_TEST_CASE(query_tile_loops_visit_every_visible_key) {
  for (int T = 1; T <= 300; ++T) {
    Seen seen(T);
    for (int q0 = 0; q0 < T; q0 += kTileRows)
      for (int k0 = 0; k0 < key_end(q0, kTileRows, T); k0 += kTileCols)
        for (int w = 0; w < kWarps; ++w)
          for (int kb = 0; kb < kTileCols; kb += kBlock) {
            const int row0 = q0 + w * kMmaM;
            if (!block_fully_masked(row0, kMmaM, k0 + kb, T))
              seen.block(row0, kMmaM, k0 + kb, kBlock);
          }
    BOOST_TEST(seen.visible() == size_t(T) * (T + 1) / 2, "T = " << T);
  }
}

// The dK/dV loop: key tile k0 visits query tiles from first_query_tile(k0, 64) to T; 16 keys ×
// 16 queries blocks classified fully masked are skipped.
BOOST_AUTO_TEST_CASE(key_tile_loops_visit_every_visible_query) {
  for (int T = 1; T <= 300; ++T) {
    Seen seen(T);
    for (int k0 = 0; k0 < T; k0 += kTileRows)
      for (int q0 = first_query_tile(k0, kTileCols); q0 < T; q0 += kTileCols)
        for (int w = 0; w < kWarps; ++w)
          for (int qb = 0; qb < kTileCols; qb += kBlock) {
            const int key0 = k0 + w * kMmaM;
            if (!block_fully_masked(q0 + qb, kBlock, key0, T))
              seen.block(q0 + qb, kBlock, key0, kMmaM);
          }
    BOOST_TEST(seen.visible() == size_t(T) * (T + 1) / 2, "T = " << T);
  }
}
