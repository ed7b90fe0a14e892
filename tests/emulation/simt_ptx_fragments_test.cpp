// The flash kernel's PTX on the emulated device (src/emulation/simt/ptx.hpp), checked against a
// second, independent description of the fragment layouts: CuTe's (CUTLASS) layout algebra for
//   SM80_16x8x16_F32BF16BF16F32_TN   (include/cute/atom/mma_traits_sm80.hpp: ALayout, BLayout,
//                                     CLayout = SM80_16x8_Row)
//   SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T (include/cute/atom/copy_traits_sm75.hpp: DstLayout)
// The shapes and strides below are copied from those files and evaluated here with CuTe's rule
// (a coordinate's colexicographic digits times the strides); nothing is taken from ptx.cpp or
// from the flash kernel's own maps (src/ops/cuda/flash_attention_tiling.hpp). Also the cp.async
// commit/wait-group semantics: a copy lands at the wait that covers it.
#define BOOST_TEST_MODULE simt_ptx_fragments
#include <cuda_runtime.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "emulation/simt/device_api.hpp"
#include "emulation/simt/fault.hpp"
#include "emulation/simt/grid.hpp"
#include "emulation/simt/ptx.hpp"

namespace ptx = db::emulation::ptx;
using db::emulation::LaunchShape;
using db::emulation::run_grid;

namespace {

// A flat CuTe layout mode list: offset(i) = Σ digit_k(i) · stride_k, digits colexicographic.
struct Modes {
  std::vector<int> shape, stride;
  int operator()(int i) const {
    int offset = 0;
    for (size_t k = 0; k < shape.size(); ++k) {
      offset += (i % shape[k]) * stride[k];
      i /= shape[k];
    }
    return offset;
  }
};
// A (thread, value) -> offset layout.
struct TvLayout {
  Modes thread, value;
  int operator()(int t, int v) const { return thread(t) + value(v); }
};

// mma_traits_sm80.hpp, MMA_Traits<SM80_16x8x16_F16F16F16F16_TN> (the bf16 traits inherit them).
// A: (M16,K16) column-major offsets m + 16k; B: (N8,K16) offsets n + 8k; C: (M16,N8) m + 16n.
const TvLayout kCuteA{{{4, 8}, {32, 1}}, {{2, 2, 2}, {16, 8, 128}}};
const TvLayout kCuteB{{{4, 8}, {16, 1}}, {{2, 2}, {8, 64}}};
const TvLayout kCuteC{{{4, 8}, {32, 1}}, {{2, 2}, {16, 8}}};
// copy_traits_sm75.hpp: DstLayout (thread, value) -> bit of the 4 × 8 × 128-bit source rows;
// the source is SrcLayout (32,128):(128,1): row r's 128 bits come from lane r's address.
const TvLayout kCuteLdsmN{{{32}, {32}}, {{32, 4}, {1, 1024}}};                 // U32x4_LDSM_N
const TvLayout kCuteLdsmT{{{4, 8}, {256, 16}}, {{16, 2, 4}, {1, 128, 1024}}};  // U16x8_LDSM_T

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

LaunchShape one_warp(size_t dynamic_bytes = 0) {
  LaunchShape s;
  s.grid = dim3(1);
  s.block = dim3(32);
  s.dynamic_shared_bytes = dynamic_bytes;
  s.kernel_name = "ptx_test";
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(mma_m16n8k16_with_cute_fragments_equals_an_fp32_matmul) {
  // Random bf16 A (16×16), B (16×8), fp32 C: each lane's registers filled from CuTe's layouts,
  // D read back through CuTe's C layout, compared with a plain matmul. Any swapped row/column,
  // register or half-word makes some entries differ by O(1).
  std::mt19937 rng(37);
  std::normal_distribution<float> normal;
  uint16_t A[16][16], B[16][8];
  float C[16][8], D[16][8];
  for (auto& row : A)
    for (auto& x : row) x = to_bf16(normal(rng));
  for (auto& row : B)
    for (auto& x : row) x = to_bf16(normal(rng));
  for (auto& row : C)
    for (auto& x : row) x = normal(rng);

  run_grid(one_warp(), [&] {
    const int lane = int(threadIdx.x);
    uint32_t a[4] = {}, b[2] = {};
    float d[4];
    for (int v = 0; v < 8; ++v) {
      const int offset = kCuteA(lane, v), m = offset % 16, k = offset / 16;
      a[v / 2] |= uint32_t(A[m][k]) << (16 * (v % 2));
    }
    for (int v = 0; v < 4; ++v) {
      const int offset = kCuteB(lane, v), n = offset % 8, k = offset / 8;
      b[v / 2] |= uint32_t(B[k][n]) << (16 * (v % 2));
    }
    for (int v = 0; v < 4; ++v) {
      const int offset = kCuteC(lane, v);
      d[v] = C[offset % 16][offset / 16];
    }
    ptx::mma_m16n8k16_bf16_f32(d, a, b);
    for (int v = 0; v < 4; ++v) {
      const int offset = kCuteC(lane, v);
      D[offset % 16][offset / 16] = d[v];
    }
  });
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double expected = C[m][n];
      for (int k = 0; k < 16; ++k) expected += double(from_bf16(A[m][k])) * from_bf16(B[k][n]);
      BOOST_TEST(std::fabs(D[m][n] - expected) < 1e-4, "D[" << m << "][" << n << "]");
    }
}

BOOST_AUTO_TEST_CASE(ldmatrix_x4_and_trans_give_each_lane_what_cute_says) {
  // Four 8×8 b16 matrices, their rows scattered in shared memory in a shuffled order; lane l
  // passes the address of row l (matrix l/8, row l%8). Expected registers from CuTe's DstLayout:
  // bit 32t + 16h + 1024j of the result is bit (that offset mod 128) of source row offset/128.
  std::vector<int> place(32);
  for (int r = 0; r < 32; ++r) place[r] = (r * 13 + 5) % 32;  // row r stored at slot place[r]
  constexpr int kRowStride = 24;                              // b16 per slot (16 + 8 padding)
  uint32_t plain[32][4], trans[32][4];
  run_grid(one_warp(32 * kRowStride * sizeof(uint16_t)), [&] {
    uint16_t* s = static_cast<uint16_t*>(db::emulation::dynamic_shared_memory());
    const int lane = int(threadIdx.x);
    for (int e = 0; e < kRowStride; ++e) s[place[lane] * kRowStride + e] = uint16_t(lane * 100 + e);
    __syncwarp();
    const uint16_t* row = s + place[lane] * kRowStride;
    ptx::ldmatrix_x4(plain[lane], row);
    ptx::ldmatrix_x4_trans(trans[lane], row);
  });
  for (int t = 0; t < 32; ++t)
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < 2; ++h) {
        const int n_bit = kCuteLdsmN(t, 32 * j + 16 * h);  // value index = bit + 32·register
        const int t_bit = kCuteLdsmT(t, 16 * h + 32 * j);  // value index = bit + 16·half + 32·reg
        const uint16_t n_expected = uint16_t((n_bit / 128) * 100 + (n_bit % 128) / 16);
        const uint16_t t_expected = uint16_t((t_bit / 128) * 100 + (t_bit % 128) / 16);
        BOOST_TEST(uint16_t(plain[t][j] >> (16 * h)) == n_expected,
                   "lane " << t << " reg " << j << " half " << h);
        BOOST_TEST(uint16_t(trans[t][j] >> (16 * h)) == t_expected,
                   "trans lane " << t << " reg " << j << " half " << h);
      }
}

BOOST_AUTO_TEST_CASE(ldmatrix_then_mma_multiplies_tiles_stored_in_shared_memory) {
  // The composition the flash kernel relies on: A (16×16 row-major) through ldmatrix.x4 with
  // lane l giving row l%16, column block l/16; B stored by k rows (B(k, n) at k·stride + n) loaded
  // with .trans. The ISA's register orders must line up for D = A·B to come out.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  constexpr int kStride = 24;
  uint16_t A[16][16], B[16][16];  // B: k × n, the second 8 columns unused by one mma
  for (auto& row : A)
    for (auto& x : row) x = to_bf16(normal(rng));
  for (auto& row : B)
    for (auto& x : row) x = to_bf16(normal(rng));
  float D[16][8] = {};
  run_grid(one_warp(2 * 16 * kStride * sizeof(uint16_t)), [&] {
    uint16_t* sa = static_cast<uint16_t*>(db::emulation::dynamic_shared_memory());
    uint16_t* sb = sa + 16 * kStride;
    const int lane = int(threadIdx.x);
    if (lane < 16)
      for (int c = 0; c < kStride; ++c) {
        sa[lane * kStride + c] = c < 16 ? A[lane][c] : 0;
        sb[lane * kStride + c] = c < 16 ? B[lane][c] : 0;
      }
    __syncwarp();
    uint32_t a[4], bt[4], b[2];
    ptx::ldmatrix_x4(a, sa + (lane % 16) * kStride + (lane / 16) * 8);
    // .trans over B's k rows: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), ...
    ptx::ldmatrix_x4_trans(bt, sb + (lane % 16) * kStride + (lane / 16) * 8);
    b[0] = bt[0], b[1] = bt[1];
    float d[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k16_bf16_f32(d, a, b);
    const int g = lane / 4, t = lane % 4;
    D[g][2 * t] = d[0], D[g][2 * t + 1] = d[1], D[g + 8][2 * t] = d[2], D[g + 8][2 * t + 1] = d[3];
  });
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double expected = 0;
      for (int k = 0; k < 16; ++k) expected += double(from_bf16(A[m][k])) * from_bf16(B[k][n]);
      BOOST_TEST(std::fabs(D[m][n] - expected) < 1e-4, "D[" << m << "][" << n << "]");
    }
}

BOOST_AUTO_TEST_CASE(mma_not_reached_by_every_lane_is_a_fault) {
  LaunchShape s = one_warp();
  s.kernel_name = "partial_mma";
  std::string fault;
  try {
    run_grid(s, [] {
      if (threadIdx.x == 31) return;
      uint32_t a[4] = {}, b[2] = {};
      float d[4] = {};
      ptx::mma_m16n8k16_bf16_f32(d, a, b);
    });
  } catch (const db::emulation::DeviceFault& e) {
    fault = e.what();
  }
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(fault.find("mma.sync.m16n8k16") != std::string::npos);
  BOOST_TEST(fault.find("waits for lanes 31") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cp_async_lands_at_the_wait_that_covers_its_group) {
  // Two groups; wait_group(1) completes the older only; the destination of the newer keeps its
  // old contents until wait_group(0). A partial source is zero-filled; an uncommitted copy is
  // not covered by any wait_group.
  alignas(16) static float src[3][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
  float seen[6][4];
  run_grid(one_warp(4 * 4 * sizeof(float)), [&] {
    float* s = static_cast<float*>(db::emulation::dynamic_shared_memory());
    if (threadIdx.x != 0) return;
    for (int i = 0; i < 16; ++i) s[i] = -1.0f;
    ptx::cp_async(s, src[0], 16, 16);
    ptx::cp_async_commit_group();
    ptx::cp_async(s + 4, src[1], 16, 8);  // two floats copied, two zero-filled
    ptx::cp_async_commit_group();
    std::memcpy(seen[0], s, 16);  // nothing waited for yet
    ptx::cp_async_wait_group(1);
    std::memcpy(seen[1], s, 16);           // group 0 done
    std::memcpy(seen[2], s + 4, 16);       // group 1 not yet
    ptx::cp_async(s + 8, src[2], 16, 16);  // not committed
    ptx::cp_async_wait_group(0);
    std::memcpy(seen[3], s + 4, 16);
    std::memcpy(seen[4], s + 8, 16);  // uncommitted: still old
    ptx::cp_async_wait_all();
    std::memcpy(seen[5], s + 8, 16);
  });
  auto row = [](std::initializer_list<float> v) { return std::vector<float>(v); };
  auto got = [&](int i) { return std::vector<float>(seen[i], seen[i] + 4); };
  BOOST_TEST(got(0) == row({-1, -1, -1, -1}), boost::test_tools::per_element());
  BOOST_TEST(got(1) == row({1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(got(2) == row({-1, -1, -1, -1}), boost::test_tools::per_element());
  BOOST_TEST(got(3) == row({5, 6, 0, 0}), boost::test_tools::per_element());
  BOOST_TEST(got(4) == row({-1, -1, -1, -1}), boost::test_tools::per_element());
  BOOST_TEST(got(5) == row({9, 10, 11, 12}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(cp_async_rejects_a_destination_outside_shared_memory) {
  alignas(16) static float src[4] = {1, 2, 3, 4};
  alignas(16) static float not_shared[4];
  std::string fault;
  try {
    run_grid(one_warp(64), [&] {
      if (threadIdx.x == 0) ptx::cp_async(not_shared, src, 16, 16);
    });
  } catch (const db::emulation::DeviceFault& e) {
    fault = e.what();
  }
  BOOST_TEST(fault.find("not in shared memory") != std::string::npos);
}
