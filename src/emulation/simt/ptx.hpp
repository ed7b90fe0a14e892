// The PTX instructions of the flash kernel, emulated from the PTX ISA (issue 37). The CUDA
// backend's src/ops/cuda/ptx.cuh calls these under DEPTHBENCH_CUDA_EMULATION in place of its
// inline asm. mma and ldmatrix are warp collectives: all 32 lanes of the warp must reach them
// (else the block faults), and each lane gets its fragment as the ISA lays it out.
#pragma once
#include <cstdint>

namespace db::emulation::ptx {

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d = a·b + d for a 16×16 A (row), a 16×8
// B (col), fp32 accumulators. With g = lane / 4, t = lane % 4 (the ISA's groupID and
// threadID_in_group), each register holding two bf16, the lower-numbered one in its low half:
//   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]  a[2] = A[g][2t+8..]  a[3] = A[g+8][2t+8..]
//   b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
//   d[0..1] = D[g][2t..2t+1] d[2..3] = D[g+8][2t..2t+1]
void mma_m16n8k16_bf16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8j..8j+7 give the 16-byte row addresses of
// matrix j's rows 0..7; lane l receives in r[j] matrix j's row l/4, elements 2(l%4) and +1.
void ldmatrix_x4(uint32_t (&r)[4], const void* row_address);
// .trans: lane l receives in r[j] matrix j's column l/4, rows 2(l%4) and +1.
void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_address);

// cp.async.{ca,cg}.shared.global [dst], [src], bytes (4, 8 or 16), src_bytes: copies src_bytes
// from global memory and zero-fills the rest. The copy happens when a cp.async.wait_group
// covering it runs: until then the destination keeps its old (undefined) contents, and the
// hazard checker reports a read of it.
void cp_async(void* shared_dst, const void* global_src, int bytes, int src_bytes);
// cp.async.commit_group: the copies issued since the last commit form a group.
void cp_async_commit_group();
// cp.async.wait_group n: all but the n most recent committed groups of this thread are done.
void cp_async_wait_group(int n);
// cp.async.wait_all: commit, then wait for everything.
void cp_async_wait_all();

// The shared-window address of a generic pointer (the emulation's PTX takes generic pointers).
uint32_t cvta_generic_to_shared(const void* p);

}  // namespace db::emulation::ptx
