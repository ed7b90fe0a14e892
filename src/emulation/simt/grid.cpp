// The SIMT scheduler (simt/grid.hpp): blocks one after another; a block's threads are Boost.Context
// fibers that run round-robin until each reaches a barrier, a warp collective or its end. A block
// that cannot make progress (a thread exited or waits elsewhere while others wait at a barrier, a
// lane named in a collective's mask never arrives) is a fault naming the threads involved.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "emulation/simt/block_run.hpp"
#include "emulation/simt/device_api.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation {
namespace device {
constinit thread_local Indices indices{};
}

namespace detail {

constinit thread_local BlockRun* active_block = nullptr;

namespace {

namespace ctx = boost::context;

// H100/H200 (sm_90) per-block limits.
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535, 65535};
constexpr size_t kMaxSharedPerBlockOptin = 232448;  // 227 KiB

// Fiber stacks: 256 KiB with a guard page below, reused across grids on this host thread (an
// mmap per thread per launch would dominate small kernels). Untouched pages cost nothing.
constexpr size_t kStackBytes = 256 * 1024;

struct StackCache {
  std::vector<void*> free;  // mapping bases (guard page first)
  ~StackCache() {
    for (void* base : free) munmap(base, kStackBytes + page());
  }
  static size_t page() {
    static const size_t bytes = size_t(sysconf(_SC_PAGESIZE));
    return bytes;
  }
};
thread_local StackCache stack_cache;

struct PooledStack {
  ctx::stack_context allocate() {
    void* base;
    if (!stack_cache.free.empty()) {
      base = stack_cache.free.back();
      stack_cache.free.pop_back();
    } else {
      base = mmap(nullptr, kStackBytes + StackCache::page(), PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) throw std::bad_alloc();
      mprotect(base, StackCache::page(), PROT_NONE);  // overflow faults instead of corrupting
    }
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char*>(base) + StackCache::page() + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    stack_cache.free.push_back(static_cast<char*>(sc.sp) - kStackBytes - StackCache::page());
  }
};

// The dynamic shared memory of this host thread's launches, grown on demand.
struct DynamicShared {
  char* bytes = nullptr;
  size_t capacity = 0;
  ~DynamicShared() { std::free(bytes); }
  char* get(size_t size) {
    if (size > capacity) {
      std::free(bytes);
      capacity = std::max<size_t>(size, 1024);
      capacity = (capacity + 127) / 128 * 128;
      bytes = static_cast<char*>(std::aligned_alloc(128, capacity));
      if (!bytes) throw std::bad_alloc();
    }
    return bytes;
  }
};
thread_local DynamicShared dynamic_shared;
thread_local uint64_t block_generation = 0;

std::string dims(uint3 d) {
  std::ostringstream s;
  s << "(" << d.x << "," << d.y << "," << d.z << ")";
  return s.str();
}
std::string dims(dim3 d) {
  return dims(uint3{d.x, d.y, d.z});
}

// "3, 5-9, 12" for a sorted list of thread ids.
std::string id_ranges(const std::vector<unsigned>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (i) s << ", ";
    s << ids[i];
    if (j > i) s << "-" << ids[j];
    i = j + 1;
  }
  return s.str();
}

std::string site_text(const WaitSite& site) {
  std::ostringstream s;
  s << site.what;
  if (site.file[0]) s << " at " << site.file << ":" << site.line;
  return s.str();
}

// Why a block cannot go on: every thread not exited waits for threads that never come.
std::string describe_deadlock(const BlockRun& run) {
  std::ostringstream s;
  s << "kernel " << run.shape->kernel_name << ", block " << dims(run.block_index)
    << ": the block cannot make progress (barrier or warp collective not reached by all the "
       "threads it waits for):";
  std::vector<unsigned> exited;
  // Group waiting threads by their site.
  std::vector<std::pair<std::string, std::vector<unsigned>>> waiting;
  for (const EmulatedThread& t : run.threads) {
    if (t.state == ThreadState::exited) {
      exited.push_back(t.linear);
      continue;
    }
    std::string where = site_text(t.site);
    if (t.state == ThreadState::at_collective) where += " (warp " + std::to_string(t.warp) + ")";
    auto it = std::find_if(waiting.begin(), waiting.end(),
                           [&](const auto& w) { return w.first == where; });
    if (it == waiting.end())
      waiting.push_back({where, {t.linear}});
    else
      it->second.push_back(t.linear);
  }
  for (const auto& [where, ids] : waiting)
    s << " threads " << id_ranges(ids) << " wait at " << where << ";";
  if (!exited.empty()) s << " threads " << id_ranges(exited) << " exited;";
  for (size_t w = 0; w < run.warps.size(); ++w)
    for (const WarpGroup& g : run.warps[w].groups) {
      std::vector<unsigned> missing;
      for (unsigned lane = 0; lane < kWarpSize; ++lane)
        if ((g.mask >> lane & 1u) && !(g.arrived >> lane & 1u)) missing.push_back(lane);
      s << " warp " << w << " " << g.site.what << " mask 0x" << std::hex << g.mask << std::dec
        << " waits for lanes " << id_ranges(missing) << ";";
    }
  return s.str();
}

void complete_pending_copies(BlockRun& run, EmulatedThread& t, long up_to_group);

}  // namespace

std::string describe_thread(const BlockRun& run, unsigned thread) {
  const EmulatedThread& t = run.threads[thread];
  std::ostringstream s;
  s << "thread " << dims(t.index) << " (linear " << t.linear << ", warp " << t.warp << " lane "
    << t.lane << ")";
  return s.str();
}

void make_ready(BlockRun& run, unsigned thread) {
  run.threads[thread].state = ThreadState::ready;
  size_t slot = run.ready_head + run.ready_count;
  if (slot >= run.ready.size()) slot -= run.ready.size();
  run.ready[slot] = thread;
  ++run.ready_count;
}

void yield(BlockRun& run) {
  EmulatedThread& t = *run.current;
  t.scheduler = std::move(t.scheduler).resume();
}

void record_fault_for(BlockRun& run, unsigned thread, std::string message) {
  if (!run.fault.empty()) return;
  std::ostringstream s;
  s << "kernel " << run.shape->kernel_name << ", block " << dims(run.block_index) << ", "
    << describe_thread(run, thread) << ": " << message;
  run.fault = s.str();
}

void record_fault(BlockRun& run, std::string message) {
  if (!run.fault.empty()) return;
  if (run.current) return record_fault_for(run, run.current->linear, std::move(message));
  run.fault = "kernel " + std::string(run.shape->kernel_name) + ", block " + dims(run.block_index) +
              ": " + message;
}

void fail_from_hook(BlockRun& run, std::string message) {
  record_fault(run, std::move(message));
  run.abandon_current = true;
  yield(run);
  std::abort();  // the scheduler never resumes an abandoned thread
}

void warp_collective(unsigned mask, WaitSite site, CompleteCollective complete, const void* in,
                     void* out, int arg, size_t bytes) {
  BlockRun* run = active_block;
  if (!run || !run->current) throw DeviceFault(std::string(site.what) + " called outside a kernel");
  EmulatedThread& t = *run->current;
  Warp& warp = run->warps[t.warp];
  const unsigned lanes = mask & warp.existing_lanes;
  const unsigned me = 1u << t.lane;
  if (!(lanes & me))
    throw DeviceFault(site_text(site) + ": the mask 0x" + [&] {
      std::ostringstream s;
      s << std::hex << mask;
      return s.str();
    }() + " does not name the calling lane");
  auto group = std::find_if(warp.groups.begin(), warp.groups.end(),
                            [&](const WarpGroup& g) { return (g.mask & lanes) != 0; });
  if (group != warp.groups.end()) {
    if (group->mask != lanes)
      throw DeviceFault(site_text(site) +
                        ": lanes of one warp meet at a collective with "
                        "different masks (0x" +
                        [&] {
                          std::ostringstream s;
                          s << std::hex << group->mask << " and 0x" << lanes;
                          return s.str();
                        }() +
                        ")");
    if ((group->site.what != site.what && std::strcmp(group->site.what, site.what) != 0) ||
        group->bytes != bytes)
      throw DeviceFault(site_text(site) + ": other lanes of the warp wait at " +
                        site_text(group->site));
  } else {
    warp.groups.push_back(WarpGroup{});
    group = warp.groups.end() - 1;
    group->mask = lanes;
    group->site = site;
    group->complete = complete;
    group->bytes = bytes;
    group->first_thread = t.linear - t.lane;
  }
  group->in[t.lane] = in;
  group->out[t.lane] = out;
  group->arg[t.lane] = arg;
  group->arrived |= me;
  t.site = site;
  if (group->arrived == group->mask) {
    WarpGroup done = *group;
    warp.groups.erase(group);
    if (done.complete) done.complete(done);
    if (done.mask == warp.existing_lanes) ++warp.sync_count;
    for (unsigned lane = 0; lane < kWarpSize; ++lane)
      if (done.mask >> lane & 1u) make_ready(*run, done.first_thread + lane);
  } else {
    t.state = ThreadState::at_collective;
  }
  yield(*run);
}

namespace {

void complete_pending_copies(BlockRun& run, EmulatedThread& t, long up_to_group) {
  auto done = std::stable_partition(t.copies.begin(), t.copies.end(),
                                    [&](const PendingCopy& c) { return c.group > up_to_group; });
  for (auto it = done; it != t.copies.end(); ++it) {
    std::memcpy(it->dst, it->src, size_t(it->src_bytes));
    std::memset(it->dst + it->src_bytes, 0, size_t(it->bytes - it->src_bytes));
    hazards_copy_done(run, *it);
  }
  t.copies.erase(done, t.copies.end());
}

}  // namespace

// cp.async.wait_group n: the copies of all but the n newest committed groups are done.
void cp_async_wait(BlockRun& run, EmulatedThread& t, int n) {
  complete_pending_copies(run, t, t.committed_groups - 1 - n);
}

}  // namespace detail

using namespace detail;

cudaError_t check_launch(const LaunchShape& shape) {
  const unsigned block[3] = {shape.block.x, shape.block.y, shape.block.z};
  const unsigned grid[3] = {shape.grid.x, shape.grid.y, shape.grid.z};
  for (int i = 0; i < 3; ++i) {
    if (block[i] == 0 || grid[i] == 0) return cudaErrorInvalidConfiguration;
    if (block[i] > kMaxBlockDim[i] || grid[i] > kMaxGridDim[i])
      return cudaErrorInvalidConfiguration;
  }
  if (uint64_t(block[0]) * block[1] * block[2] > kMaxThreadsPerBlock)
    return cudaErrorInvalidConfiguration;
  // A kernel's limit can be raised to the opt-in maximum (cudaFuncSetAttribute refuses more), and
  // a launch asking for more dynamic shared memory than its kernel's limit fails.
  if (shape.max_dynamic_shared_bytes > kMaxSharedPerBlockOptin) return cudaErrorInvalidValue;
  if (shape.dynamic_shared_bytes > shape.max_dynamic_shared_bytes) return cudaErrorInvalidValue;
  return cudaSuccess;
}

void* dynamic_shared_memory() {
  BlockRun* run = active_block;
  return run ? run->dynamic_shared : nullptr;
}

namespace {

const char* error_text(cudaError_t e) {
  switch (e) {
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    default:
      return "launch error";
  }
}

// Sets the scheduler up for one run of a grid and takes it down again (also on a fault).
struct GridRun {
  BlockRun run;
  bool finished = false;
  const std::function<void()>* body = nullptr;

  explicit GridRun(const LaunchShape& shape, const std::function<void()>& thread_body)
      : body(&thread_body) {
    run.shape = &shape;
    const dim3 b = shape.block;
    run.n_threads = b.x * b.y * b.z;
    run.threads.resize(run.n_threads);
    run.ready.resize(run.n_threads);
    run.warps.resize((run.n_threads + kWarpSize - 1) / kWarpSize);
    for (unsigned i = 0; i < run.n_threads; ++i) {
      EmulatedThread& t = run.threads[i];
      t.linear = i;
      t.index = uint3{i % b.x, i / b.x % b.y, i / (b.x * b.y)};
      t.warp = i / kWarpSize;
      t.lane = i % kWarpSize;
      run.warps[t.warp].existing_lanes |= 1u << t.lane;
    }
    run.dynamic_shared_bytes = shape.dynamic_shared_bytes;
    run.dynamic_shared = dynamic_shared.get(shape.dynamic_shared_bytes);
    device::indices.block_dim = uint3{b.x, b.y, b.z};
    device::indices.grid_dim = uint3{shape.grid.x, shape.grid.y, shape.grid.z};
    active_block = &run;
  }

  ~GridRun() {
    // A clean end lets each fiber return from its loop; after a fault the fibers still
    // suspended are unwound by their destructors.
    finished = true;
    for (EmulatedThread& t : run.threads)
      if (t.fiber && t.state == ThreadState::exited && run.fault.empty()) resume(t);
    run.threads.clear();
    active_block = nullptr;
  }

  void resume(EmulatedThread& t) {
    run.current = &t;
    device::indices.thread_idx = t.index;
    t.fiber = std::move(t.fiber).resume();
    run.current = nullptr;
    if (run.abandon_current) {
      // Faulted inside a memory hook: the thread must not run on, and unwinding through a hook
      // is not possible; its fiber (and stack) is left suspended for good.
      new ctx::fiber(std::move(t.fiber));
      t.state = ThreadState::exited;
      run.abandon_current = false;
    }
  }

  ctx::fiber make_fiber(unsigned i) {
    return ctx::fiber(std::allocator_arg, PooledStack{}, [this, i](ctx::fiber&& scheduler) {
      EmulatedThread& t = run.threads[i];
      t.stack_top = static_cast<const char*>(__builtin_frame_address(0));
      t.scheduler = std::move(scheduler);
      while (!finished) {
        try {
          (*body)();
        } catch (const ctx::detail::forced_unwind&) {
          throw;
        } catch (const DeviceFault& e) {
          record_fault(run, e.what());
        } catch (const std::exception& e) {
          record_fault(run, std::string("exception thrown by the kernel: ") + e.what());
        } catch (...) {
          record_fault(run, "unknown exception thrown by the kernel");
        }
        // Copies never waited for still land (the hardware completes them).
        if (!t.copies.empty()) cp_async_wait(run, t, 0);
        t.state = ThreadState::exited;
        ++run.exited;
        t.scheduler = std::move(t.scheduler).resume();
      }
      return std::move(t.scheduler);
    });
  }

  void run_block(uint3 block_index) {
    run.block_index = block_index;
    device::indices.block_idx = block_index;
    run.barrier_epoch = 1;
    run.at_barrier = 0;
    run.exited = 0;
    run.ready_head = run.ready_count = 0;
    run.generation = ++block_generation;
    for (Warp& w : run.warps) {
      w.sync_count = 0;
      w.groups.clear();
    }
    // Shared memory starts undefined: poison it so a kernel relying on leftovers of an earlier
    // block sees NaNs (0xff bytes are a NaN in fp32 and bf16).
    if (run.dynamic_shared_bytes) std::memset(run.dynamic_shared, 0xff, run.dynamic_shared_bytes);
    hazards_begin_block(run);
    for (unsigned i = 0; i < run.n_threads; ++i) {
      EmulatedThread& t = run.threads[i];
      if (!t.fiber) t.fiber = make_fiber(i);
      t.copies.clear();
      t.committed_groups = 0;
      make_ready(run, i);
    }
    while (run.ready_count) {
      const unsigned i = run.ready[run.ready_head];
      if (++run.ready_head == run.ready.size()) run.ready_head = 0;
      --run.ready_count;
      resume(run.threads[i]);
      if (!run.fault.empty()) throw DeviceFault(run.fault);
    }
    if (run.exited != run.n_threads) {
      run.fault = describe_deadlock(run);
      throw DeviceFault(run.fault);
    }
    hazards_end_block(run);
    if (!run.fault.empty()) throw DeviceFault(run.fault);
  }
};

}  // namespace

void run_grid(const LaunchShape& shape, const std::function<void()>& thread_body) {
  if (active_block)
    throw DeviceFault(std::string("kernel ") + shape.kernel_name +
                      ": launched from inside a running kernel (dynamic parallelism is not "
                      "emulated)");
  if (const cudaError_t e = check_launch(shape); e != cudaSuccess)
    throw DeviceFault(std::string("kernel ") + shape.kernel_name + ": launch refused (" +
                      error_text(e) + "), grid " + dims(shape.grid) + " block " +
                      dims(shape.block) + " dynamic shared " +
                      std::to_string(shape.dynamic_shared_bytes) + " bytes (limit " +
                      std::to_string(shape.max_dynamic_shared_bytes) + ")");
  GridRun grid(shape, thread_body);
  for (unsigned z = 0; z < shape.grid.z; ++z)
    for (unsigned y = 0; y < shape.grid.y; ++y)
      for (unsigned x = 0; x < shape.grid.x; ++x) grid.run_block(uint3{x, y, z});
}

}  // namespace db::emulation
