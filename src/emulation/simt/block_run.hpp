// Internal state of the SIMT model while a block runs on this host thread: its threads (fibers),
// warps, barrier and the pending warp collectives. Shared by grid.cpp (scheduler), device_api.cpp
// (barriers, shuffles, atomics), ptx.cpp (warp-wide PTX) and hazards.cpp (the checker). Not
// included by kernel code.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <boost/context/fiber.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "emulation/simt/fault.hpp"
#include "emulation/simt/grid.hpp"

namespace db::emulation::detail {

constexpr unsigned kWarpSize = 32;

enum class ThreadState : uint8_t { ready, at_barrier, at_collective, exited };

// Where a thread waits (a barrier or a warp collective), for fault messages.
struct WaitSite {
  const char* what = "";
  const char* file = "";
  unsigned line = 0;
};

// A cp.async issued by a thread and not yet waited for: the copy happens at the wait.
struct PendingCopy {
  char* dst;
  const char* src;
  int bytes, src_bytes;
  long group;  // the commit group (the number of groups this thread committed before)
};

struct EmulatedThread {
  uint3 index{};
  unsigned linear = 0, warp = 0, lane = 0;
  ThreadState state = ThreadState::exited;
  WaitSite site;
  boost::context::fiber fiber;      // the thread while suspended
  boost::context::fiber scheduler;  // the scheduler while this thread runs
  std::vector<PendingCopy> copies;
  long committed_groups = 0;
  // The top of this thread's fiber stack: every local of the kernel lies between the frame of a
  // memory hook and here, and needs no check (most accesses are to locals).
  const char* stack_top = nullptr;
};

struct WarpGroup;
// Runs when the last lane of `group` arrives, with every lane's in/out/arg; may throw DeviceFault.
using CompleteCollective = void (*)(WarpGroup& group);

// One warp collective in progress: the lanes of `mask` that arrived so far.
struct WarpGroup {
  unsigned mask = 0, arrived = 0;
  WaitSite site;
  CompleteCollective complete = nullptr;
  std::array<const void*, kWarpSize> in{};
  std::array<void*, kWarpSize> out{};
  std::array<int, kWarpSize> arg{};
  size_t bytes = 0;           // the size of each lane's value (shuffles)
  unsigned first_thread = 0;  // linear id of lane 0
};

struct Warp {
  unsigned existing_lanes = 0;  // lanes that exist (a block's last warp may be partial)
  uint32_t sync_count = 0;      // completed collectives over all existing lanes (hazard order)
  std::vector<WarpGroup> groups;
};

struct BlockRun {
  const LaunchShape* shape = nullptr;
  uint3 block_index{};
  unsigned n_threads = 0;
  std::vector<EmulatedThread> threads;
  std::vector<Warp> warps;
  uint32_t barrier_epoch = 1;  // barriers passed by this block, + 1
  unsigned at_barrier = 0, exited = 0;
  std::vector<unsigned> ready;  // ring of thread ids, each thread at most once
  size_t ready_head = 0, ready_count = 0;
  EmulatedThread* current = nullptr;
  bool abandon_current = false;  // the current thread faulted inside a memory hook
  std::string fault;             // the first fault (empty: none)
  char* dynamic_shared = nullptr;
  size_t dynamic_shared_bytes = 0;
  uint64_t generation = 0;  // unique per block run on this host thread (hazard shadow)
};

// The block running on this host thread, nullptr when none (constinit: no TLS wrapper call in
// the memory hooks' fast path).
extern constinit thread_local BlockRun* active_block;

// The block this host thread is running, for a device function called from kernel code;
// `what` names the function in the fault when there is none.
inline BlockRun& running_block(const char* what) {
  BlockRun* run = active_block;
  if (!run || !run->current) throw DeviceFault(std::string(what) + " called outside a kernel");
  return *run;
}

void make_ready(BlockRun& run, unsigned thread);
// Suspends the current thread until the scheduler resumes it.
void yield(BlockRun& run);
// Records a fault (the first one wins) without interrupting the current thread.
void record_fault(BlockRun& run, std::string message);
// Records a fault of `thread` (not necessarily the current one).
void record_fault_for(BlockRun& run, unsigned thread, std::string message);
// Records a fault and leaves the current thread forever (its fiber is never resumed nor
// unwound): used from the memory hooks, which must not throw and must not let the access happen.
[[noreturn]] void fail_from_hook(BlockRun& run, std::string message);

// Arrives at a warp collective over `mask` (lanes that do not exist dropped). The last lane to
// arrive runs `complete`; every lane then waits for the scheduler (round-robin order).
void warp_collective(unsigned mask, WaitSite site, CompleteCollective complete, const void* in,
                     void* out, int arg, size_t bytes = 0);

std::string describe_thread(const BlockRun& run, unsigned thread);

// Hazard checker entry points (hazards.cpp), called by the model for accesses made by its own,
// uninstrumented code on behalf of a thread (ldmatrix, cp.async, atomics) and at block start.
void hazards_begin_block(BlockRun& run);
void hazards_end_block(BlockRun& run);
// A barrier released (the reads of never-written shared memory of the interval are checked).
void hazards_barrier(BlockRun& run);
// An access of `bytes` at p by `thread` (its linear id): shared memory is checked for races and
// uninitialised reads, device memory for staying inside an allocation. `what` names the
// instruction (nullptr: plain kernel code). A fault on global memory leaves the thread (the
// access must not happen); other faults are recorded and the thread runs to its next
// scheduling point.
void check_access(BlockRun& run, unsigned thread, const void* p, size_t bytes, bool write,
                  const char* what);
// Called by the memory hooks: the running kernel's code is instrumented.
void note_instrumented_access();
// An atomic read-modify-write by the current thread (atomics do not race each other).
void check_atomic(BlockRun& run, const void* p, size_t bytes);
// cp.async bookkeeping for the current thread: the destination is pending from issue to wait.
void hazards_copy_issued(BlockRun& run, const PendingCopy& copy);
void hazards_copy_done(BlockRun& run, const PendingCopy& copy);
// Whether [p, p + bytes) is this block's shared memory (dynamic, or static __shared__ arrays).
bool is_shared_address(const BlockRun& run, const void* p, size_t bytes);

// cp.async.wait_group n for thread t (grid.cpp).
void cp_async_wait(BlockRun& run, EmulatedThread& t, int n);

}  // namespace db::emulation::detail
