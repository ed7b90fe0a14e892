// The flash kernel's PTX on the emulated device (simt/ptx.hpp). Fragment layouts follow the PTX
// ISA ("Matrix Fragments for mma.m16n8k16 with floating point type", "Warp-level matrix load
// instruction: ldmatrix"); tests/emulation/simt_ptx_fragments_test.cpp checks them against
// CuTe's independent layouts (SM80_16x8x16_F32BF16BF16F32_TN, SM75_U32x4_LDSM_N,
// SM75_U16x8_LDSM_T).
#include "emulation/simt/ptx.hpp"

#include <cstring>
#include <string>

#include "emulation/simt/block_run.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation::ptx {

using namespace detail;

namespace {

float bf16_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}
uint16_t low(uint32_t r) {
  return uint16_t(r & 0xffffu);
}
uint16_t high(uint32_t r) {
  return uint16_t(r >> 16);
}

// The whole warp must take part in mma and ldmatrix (".sync.aligned").
void require_full_warp(const BlockRun& run, const char* what) {
  const Warp& warp = run.warps[run.current->warp];
  if (warp.existing_lanes != 0xffffffffu)
    throw DeviceFault(std::string(what) +
                      " in a partial warp (the block size is not a multiple "
                      "of 32): the instruction needs all 32 lanes");
}

struct MmaLane {
  const uint32_t* a;
  const uint32_t* b;
  float* d;
};

void complete_mma(WarpGroup& g) {
  float A[16][16], B[16][8], C[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const MmaLane& in = *static_cast<const MmaLane*>(g.in[lane]);
    const int group = lane >> 2, t = lane & 3;
    for (int reg = 0; reg < 4; ++reg) {
      const int row = group + 8 * (reg & 1), col = 2 * t + 8 * (reg >> 1);
      A[row][col] = bf16_to_float(low(in.a[reg]));
      A[row][col + 1] = bf16_to_float(high(in.a[reg]));
    }
    for (int reg = 0; reg < 2; ++reg) {
      const int k = 2 * t + 8 * reg;
      B[k][group] = bf16_to_float(low(in.b[reg]));
      B[k + 1][group] = bf16_to_float(high(in.b[reg]));
    }
    for (int i = 0; i < 4; ++i) C[group + 8 * (i >> 1)][2 * t + (i & 1)] = in.d[i];
  }
  // bf16 products are exact in fp32; the sum is accumulated in fp32 in k order.
  float D[16][8];
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float sum = C[m][n];
      for (int k = 0; k < 16; ++k) sum += A[m][k] * B[k][n];
      D[m][n] = sum;
    }
  for (int lane = 0; lane < 32; ++lane) {
    float* d = static_cast<const MmaLane*>(g.in[lane])->d;
    const int group = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) d[i] = D[group + 8 * (i >> 1)][2 * t + (i & 1)];
  }
}

template <bool kTranspose>
void complete_ldmatrix(WarpGroup& g) {
  BlockRun& run = *active_block;
  // The four 8×8 matrices of b16, row by row: matrix j's row r comes from lane 8j + r's address.
  uint16_t M[4][8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const char* row = static_cast<const char*>(g.in[lane]);
    if (reinterpret_cast<uintptr_t>(row) % 16 != 0 || !is_shared_address(run, row, 16))
      throw DeviceFault(std::string(g.site.what) + ": lane " + std::to_string(lane) +
                        "'s row address is not a 16-byte aligned shared-memory address");
    check_access(run, g.first_thread + lane, row, 16, false, g.site.what);
    std::memcpy(M[lane / 8][lane % 8], row, 16);
  }
  for (int lane = 0; lane < 32; ++lane) {
    uint32_t* r = static_cast<uint32_t*>(g.out[lane]);
    const int q = lane / 4, e = 2 * (lane % 4);
    for (int j = 0; j < 4; ++j) {
      const uint16_t lo = kTranspose ? M[j][e][q] : M[j][q][e];
      const uint16_t hi = kTranspose ? M[j][e + 1][q] : M[j][q][e + 1];
      r[j] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
}

}  // namespace

void mma_m16n8k16_bf16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  BlockRun& run = running_block("mma.sync");
  require_full_warp(run, "mma.sync.m16n8k16");
  const MmaLane lane{a, b, d};
  warp_collective(0xffffffffu, WaitSite{"mma.sync.m16n8k16", "", 0}, &complete_mma, &lane, nullptr,
                  0);
}

void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
  BlockRun& run = running_block("ldmatrix");
  require_full_warp(run, "ldmatrix.x4");
  warp_collective(0xffffffffu, WaitSite{"ldmatrix.x4", "", 0}, &complete_ldmatrix<false>,
                  row_address, r, 0);
}

void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_address) {
  BlockRun& run = running_block("ldmatrix");
  require_full_warp(run, "ldmatrix.x4.trans");
  warp_collective(0xffffffffu, WaitSite{"ldmatrix.x4.trans", "", 0}, &complete_ldmatrix<true>,
                  row_address, r, 0);
}

void cp_async(void* shared_dst, const void* global_src, int bytes, int src_bytes) {
  BlockRun& run = running_block("cp.async");
  EmulatedThread& t = *run.current;
  char* dst = static_cast<char*>(shared_dst);
  if (bytes != 4 && bytes != 8 && bytes != 16)
    throw DeviceFault("cp.async of " + std::to_string(bytes) + " bytes (4, 8 or 16 allowed)");
  if (src_bytes < 0 || src_bytes > bytes)
    throw DeviceFault("cp.async src-size " + std::to_string(src_bytes) + " outside 0.." +
                      std::to_string(bytes));
  if (reinterpret_cast<uintptr_t>(dst) % size_t(bytes) != 0 ||
      reinterpret_cast<uintptr_t>(global_src) % size_t(bytes) != 0)
    throw DeviceFault("cp.async of " + std::to_string(bytes) + " bytes with a misaligned address");
  if (!is_shared_address(run, dst, size_t(bytes)))
    throw DeviceFault("cp.async destination is not in shared memory");
  if (src_bytes > 0) check_access(run, t.linear, global_src, size_t(src_bytes), false, "cp.async");
  const PendingCopy copy{dst, static_cast<const char*>(global_src), bytes, src_bytes,
                         t.committed_groups};
  hazards_copy_issued(run, copy);
  t.copies.push_back(copy);
}

void cp_async_commit_group() {
  ++running_block("cp.async.commit_group").current->committed_groups;
}

void cp_async_wait_group(int n) {
  BlockRun& run = running_block("cp.async.wait_group");
  cp_async_wait(run, *run.current, n);
}

void cp_async_wait_all() {
  cp_async_commit_group();
  cp_async_wait_group(0);
}

uint32_t cvta_generic_to_shared(const void* p) {
  return uint32_t(reinterpret_cast<uintptr_t>(p));
}

}  // namespace db::emulation::ptx
