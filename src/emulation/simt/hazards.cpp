// The hazard checker of the emulated device, in the spirit of compute-sanitizer's racecheck,
// memcheck, initcheck and synccheck (issue 37).
//
// Mechanism: kernel code is compiled by g++ with -fsanitize=thread
// (--param=tsan-instrument-func-entry-exit=0) and WITHOUT libtsan: the compiler then calls the
// __tsan_* entry points defined at the end of this file before every load and store, and this
// library decides what the access means. The hooks return at once when no kernel runs on the
// calling host thread; this file itself, the runtime and the library emulations are not
// instrumented, so only kernel code is checked.
//
// Shared memory (the launch's dynamic buffer, and the static __shared__ arrays, which live in
// the thread-local storage block, see simt/device_api.hpp) has a shadow entry per byte: whether
// the block wrote it, the last writer (thread, barrier epoch, the warp's sync count), the readers
// since the last barrier, and whether a cp.async to it is pending. Two accesses of different
// threads, at least one a write, race unless a __syncthreads lies between them (different barrier
// epochs) or both threads are in one warp and a warp collective over the whole warp lies between.
// Device memory (the arena of memory_map.hpp) is checked to stay inside a live allocation.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

#include "emulation/memory_map.hpp"
#include "emulation/simt/block_run.hpp"
#include "emulation/simt/device_api.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation::detail {
namespace {

constexpr size_t kMaxSharedPerBlock = 232448;  // 227 KiB, static + dynamic
constexpr uint16_t kManyReaders = 0xffff;
constexpr uint8_t kManyWarps = 0xff;
constexpr uint8_t kPendingCopy = 1;        // a cp.async to this byte is not yet waited for
constexpr uint8_t kAtomicWrite = 2;        // the last write was an atomic (atomics do not race)
constexpr uint8_t kUninitialisedRead = 4;  // read before any write in this barrier interval

struct Shadow {
  uint64_t generation = 0;   // the block run this entry describes; another: untouched this block
  uint32_t write_epoch = 0;  // barrier epoch of the last write, 0: not written by this block
  uint32_t read_epoch = 0;   // barrier epoch of the recorded reads, 0: none
  uint32_t writer_sync = 0;  // the writer's warp sync count at the write
  uint32_t reader_sync = 0;  // the readers' warp sync count at the latest read
  uint16_t writer = 0;       // linear thread id (of the cp.async issuer while pending)
  uint16_t reader = 0;       // linear thread id or kManyReaders
  uint8_t reader_warp = 0;   // the readers' warp or kManyWarps
  uint8_t flags = 0;
};

// A range of shared memory and its shadow.
struct Region {
  const char* begin = nullptr;
  const char* end = nullptr;
  std::vector<Shadow> shadow;
  bool is_static = false;
};

// The shadow has one entry per cell of kCell bytes: bf16 is the smallest type a kernel keeps in
// shared memory, so two threads never own the two bytes of one cell (two bytes of one cell
// written by different threads would be reported as a race). Half the entries of a per-byte
// shadow, half the checking work for every access. next_cell(p) steps an access over its cells.
constexpr size_t kCell = 2;
size_t cells(size_t bytes) {
  return (bytes + kCell - 1) / kCell;
}
size_t next_cell(const Region& region, const char* p) {
  return kCell - size_t(p - region.begin) % kCell;
}

struct Checker {
  bool enabled = true;
  // Whether the running grid's kernel code is instrumented (a hook fired from one of its
  // threads). Shared-memory state is only known then: the accesses the model makes itself
  // (ldmatrix, cp.async, atomics) are checked against it only for instrumented kernels.
  bool instrumented = false;
  Region dynamic;
  std::vector<Region> statics;  // one per module with thread-local storage
  size_t static_bytes_touched = 0;
  Allocation last_allocation;  // the allocation the last global access hit (a cache)
  // Reads of bytes nobody wrote yet in this barrier interval. If another thread writes one
  // before the next barrier, that write reports the race (the read is a recorded reader);
  // otherwise the read was of uninitialised memory, reported at the barrier.
  struct UninitialisedRead {
    Region* region;
    const char* address;
    size_t bytes;
    unsigned thread;
    std::string what;
  };
  std::vector<UninitialisedRead> uninitialised_reads;
};

thread_local Checker checker;

bool checker_enabled_by_environment() {
  const char* v = std::getenv("DB_EMULATION_HAZARDS");
  return !(v && v[0] == '0');
}

int add_tls_region(dl_phdr_info* info, size_t, void* data) {
  auto& regions = *static_cast<std::vector<Region>*>(data);
  if (!info->dlpi_tls_data) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_phdr[i].p_memsz > 0) {
      Region r;
      r.begin = static_cast<const char*>(info->dlpi_tls_data);
      r.end = r.begin + info->dlpi_phdr[i].p_memsz;
      r.is_static = true;
      regions.push_back(std::move(r));
    }
  return 0;
}

// The static __shared__ arrays are thread_local: they lie in this host thread's TLS blocks.
// Found once per grid (a module loaded since adds a block); shadows are kept across grids (their
// entries are stamped with the block run, so nothing needs clearing).
void find_static_shared() {
  std::vector<Region> regions;
  dl_iterate_phdr(add_tls_region, &regions);
  for (Region& r : regions) {
    auto known = std::find_if(checker.statics.begin(), checker.statics.end(), [&](const Region& k) {
      return k.begin == r.begin && k.end == r.end;
    });
    if (known != checker.statics.end())
      r.shadow = std::move(known->shadow);
    else
      r.shadow.resize(cells(size_t(r.end - r.begin)));
  }
  checker.statics = std::move(regions);
}

std::string hex(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

std::string where(const Region& region, const char* p) {
  std::ostringstream s;
  s << hex(p);
  if (region.is_static)
    s << " (static __shared__)";
  else
    s << " (dynamic shared offset " << (p - region.begin) << ")";
  return s.str();
}

bool in_warp_order(const BlockRun& run, unsigned earlier, uint32_t earlier_sync, unsigned thread) {
  if (earlier == thread) return true;
  const unsigned warp = thread / kWarpSize;
  return earlier / kWarpSize == warp && run.warps[warp].sync_count > earlier_sync;
}

Shadow& entry(const BlockRun& run, Region& region, const char* p) {
  Shadow& s = region.shadow[size_t(p - region.begin) / kCell];
  if (s.generation != run.generation) {
    s = Shadow{};
    s.generation = run.generation;
    if (region.is_static) checker.static_bytes_touched += kCell;
  }
  return s;
}

void report(BlockRun& run, const std::string& message) {
  record_fault(run, message);
}

std::string access_text(bool write, size_t bytes, const char* what) {
  std::ostringstream s;
  s << (what ? what : (write ? "write" : "read")) << " of " << bytes << " bytes";
  return s.str();
}

void check_shared(BlockRun& run, Region& region, unsigned thread, const char* p, size_t bytes,
                  bool write, const char* what) {
  const unsigned warp = thread / kWarpSize;
  const uint32_t epoch = run.barrier_epoch, sync = run.warps[warp].sync_count;
  for (size_t i = 0; i < bytes; i += next_cell(region, p + i)) {
    if (!run.fault.empty()) return;
    Shadow& s = entry(run, region, p + i);
    auto at = [&] { return where(region, p + i); };
    if (s.flags & kPendingCopy) {
      report(run, access_text(write, bytes, what) + " at " + at() +
                      (write ? " overwrites" : " reads") + " the destination of a cp.async by " +
                      describe_thread(run, s.writer) +
                      " before its cp.async.wait_group (the copy has not happened yet)");
      return;
    }
    if (!write) {
      if (s.write_epoch == 0) {
        s.flags |= kUninitialisedRead;
        if (checker.uninitialised_reads.empty() || checker.uninitialised_reads.back().address != p)
          checker.uninitialised_reads.push_back(
              {&region, p, bytes, thread, access_text(write, bytes, what)});
      }
      if (s.write_epoch == epoch && !in_warp_order(run, s.writer, s.writer_sync, thread)) {
        report(run, "shared-memory race (read after write): " + access_text(write, bytes, what) +
                        " at " + at() + " reads what " + describe_thread(run, s.writer) +
                        " wrote with no __syncthreads (or warp sync) between");
        return;
      }
      if (s.read_epoch != epoch) {
        s.read_epoch = epoch;
        s.reader = uint16_t(thread);
        s.reader_warp = uint8_t(warp);
      } else {
        if (s.reader != thread) s.reader = kManyReaders;
        if (s.reader_warp != warp) s.reader_warp = kManyWarps;
      }
      s.reader_sync = sync;
      continue;
    }
    if (s.write_epoch == epoch && !in_warp_order(run, s.writer, s.writer_sync, thread)) {
      report(run, "shared-memory race (write after write): " + access_text(write, bytes, what) +
                      " at " + at() + " races a write by " + describe_thread(run, s.writer) +
                      " with no __syncthreads (or warp sync) between");
      return;
    }
    if ((s.flags & kUninitialisedRead) && s.reader == thread) {
      report(run, "read at " + at() +
                      " of shared memory this block never wrote (uninitialised), before this "
                      "thread's own " +
                      access_text(write, bytes, what));
      return;
    }
    if (s.read_epoch == epoch && s.reader != thread &&
        !(s.reader_warp == warp && run.warps[warp].sync_count > s.reader_sync)) {
      report(run, "shared-memory race (write after read): " + access_text(write, bytes, what) +
                      " at " + at() + " overwrites what " +
                      (s.reader == kManyReaders ? std::string("other threads")
                                                : describe_thread(run, s.reader)) +
                      " read with no __syncthreads (or warp sync) between");
      return;
    }
    s.write_epoch = epoch;
    s.writer = uint16_t(thread);
    s.writer_sync = sync;
    s.read_epoch = 0;
    s.flags &= uint8_t(~(kAtomicWrite | kUninitialisedRead));
  }
}

// At a barrier or the block's end: the reads of bytes still never written were uninitialised.
void report_uninitialised_reads(BlockRun& run) {
  for (const auto& read : checker.uninitialised_reads) {
    if (!run.fault.empty()) break;
    for (size_t i = 0; i < read.bytes; i += next_cell(*read.region, read.address + i)) {
      Shadow& s = read.region->shadow[size_t(read.address + i - read.region->begin) / kCell];
      if (!(s.flags & kUninitialisedRead)) continue;  // written since (a race, reported then)
      record_fault_for(run, read.thread,
                       read.what + " at " + where(*read.region, read.address + i) +
                           " reads shared memory this block never wrote (uninitialised)");
      break;
    }
  }
  checker.uninitialised_reads.clear();
}

Region* shared_region(const char* p) {
  if (p >= checker.dynamic.begin && p < checker.dynamic.end) return &checker.dynamic;
  for (Region& r : checker.statics)
    if (p >= r.begin && p < r.end) return &r;
  return nullptr;
}

bool is_emulator_state(const char* p) {
  const char* indices = reinterpret_cast<const char*>(&device::indices);
  return p >= indices && p < indices + sizeof(device::Indices);
}

void check_global(BlockRun& run, const char* p, size_t bytes, bool write, const char* what) {
  const Allocation& cached = checker.last_allocation;
  if (p >= cached.base && p + bytes <= cached.base + cached.bytes) return;
  if (!in_device_arena(p)) return;
  if (const Allocation* a = find_allocation(p, bytes)) {
    checker.last_allocation = *a;
    return;
  }
  std::ostringstream s;
  s << "out-of-bounds global " << access_text(write, bytes, what) << " at " << hex(p);
  if (const Allocation* a = find_allocation(p, 1))
    s << ": crosses the end of the allocation at " << hex(a->base) << " of " << a->bytes
      << " bytes";
  else
    s << ": in no live device allocation (past an allocation's end, or freed memory)";
  fail_from_hook(run, s.str());
}

}  // namespace

void note_instrumented_access() {
  checker.instrumented = true;
}

void hazards_begin_block(BlockRun& run) {
  if (run.block_index.x == 0 && run.block_index.y == 0 && run.block_index.z == 0) {
    checker.enabled = checker_enabled_by_environment();
    find_static_shared();
    checker.dynamic.begin = run.dynamic_shared;
    // The whole window up to the largest launch: an access past this launch's size is caught.
    checker.dynamic.end = run.dynamic_shared + std::max<size_t>(run.dynamic_shared_bytes, 16);
    if (checker.dynamic.shadow.size() < cells(size_t(checker.dynamic.end - checker.dynamic.begin)))
      checker.dynamic.shadow.resize(cells(size_t(checker.dynamic.end - checker.dynamic.begin)));
    checker.last_allocation = Allocation{};
    checker.instrumented = false;
  }
  checker.static_bytes_touched = 0;
  checker.uninitialised_reads.clear();
}

void hazards_barrier(BlockRun& run) {
  if (!checker.uninitialised_reads.empty()) report_uninitialised_reads(run);
}

void hazards_end_block(BlockRun& run) {
  if (!checker.uninitialised_reads.empty()) report_uninitialised_reads(run);
  if (checker.static_bytes_touched + run.dynamic_shared_bytes > kMaxSharedPerBlock)
    record_fault(run, "the block uses " + std::to_string(checker.static_bytes_touched) +
                          " bytes of static and " + std::to_string(run.dynamic_shared_bytes) +
                          " of dynamic shared memory, over the 227 KiB a block may have");
}

bool is_shared_address(const BlockRun& run, const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  if (c >= run.dynamic_shared && c + bytes <= run.dynamic_shared + run.dynamic_shared_bytes)
    return true;
  for (const Region& r : checker.statics)
    if (c >= r.begin && c + bytes <= r.end) return true;
  return false;
}

void check_access(BlockRun& run, unsigned thread, const void* p, size_t bytes, bool write,
                  const char* what) {
  if (!checker.enabled || !run.fault.empty()) return;
  const char* c = static_cast<const char*>(p);
  // Global memory first: the device arena is one range, the shared regions a list.
  if (in_device_arena(c)) return check_global(run, c, bytes, write, what);
  if (Region* region = shared_region(c)) {
    if (region == &checker.dynamic && c + bytes > run.dynamic_shared + run.dynamic_shared_bytes) {
      record_fault(run, "out-of-bounds shared " + access_text(write, bytes, what) + " at " +
                            hex(c) + ": dynamic shared memory is " +
                            std::to_string(run.dynamic_shared_bytes) + " bytes, this is offset " +
                            std::to_string(c - run.dynamic_shared));
      return;
    }
    if (!is_emulator_state(c) && checker.instrumented)
      check_shared(run, *region, thread, c, bytes, write, what);
    return;
  }
  check_global(run, c, bytes, write, what);
}

void check_atomic(BlockRun& run, const void* p, size_t bytes) {
  if (!checker.enabled || !run.fault.empty()) return;
  const char* c = static_cast<const char*>(p);
  if (Region* region = shared_region(c)) {
    if (!checker.instrumented) return;
    // Atomics do not race each other; plain accesses of other threads race them.
    const unsigned thread = run.current->linear, warp = thread / kWarpSize;
    const uint32_t epoch = run.barrier_epoch, sync = run.warps[warp].sync_count;
    for (size_t i = 0; i < bytes; i += next_cell(*region, c + i)) {
      Shadow& s = entry(run, *region, c + i);
      if (s.write_epoch == 0 || (s.flags & kPendingCopy)) {
        record_fault(run, "atomic on shared memory this block never wrote (uninitialised) at " +
                              where(*region, c + i));
        return;
      }
      const bool plain_write_races = s.write_epoch == epoch && !(s.flags & kAtomicWrite) &&
                                     !in_warp_order(run, s.writer, s.writer_sync, thread);
      const bool plain_read_races = s.read_epoch == epoch && s.reader != thread &&
                                    !(s.reader_warp == warp && sync > s.reader_sync);
      if (plain_write_races || plain_read_races) {
        record_fault(run, "shared-memory race (atomic against a plain " +
                              std::string(plain_write_races ? "write by " : "read by ") +
                              (plain_write_races || s.reader != kManyReaders
                                   ? describe_thread(run, plain_write_races ? s.writer : s.reader)
                                   : std::string("other threads")) +
                              ") at " + where(*region, c + i) +
                              " with no __syncthreads (or warp sync) between");
        return;
      }
      s.write_epoch = epoch;
      s.writer = uint16_t(thread);
      s.writer_sync = sync;
      s.read_epoch = 0;
      s.flags |= kAtomicWrite;
    }
    return;
  }
  check_global(run, c, bytes, true, "atomic");
}

void hazards_copy_issued(BlockRun& run, const PendingCopy& copy) {
  if (!checker.enabled || !checker.instrumented) return;
  Region* region = shared_region(copy.dst);
  if (!region) return;
  const unsigned thread = run.current->linear;
  // The asynchronous copy writes its destination: it must not race earlier accesses.
  check_shared(run, *region, thread, copy.dst, size_t(copy.bytes), true, "cp.async");
  for (size_t i = 0; i < size_t(copy.bytes); i += next_cell(*region, copy.dst + i)) {
    Shadow& s = entry(run, *region, copy.dst + i);
    s.flags |= kPendingCopy;
    s.writer = uint16_t(thread);
  }
}

void hazards_copy_done(BlockRun& run, const PendingCopy& copy) {
  if (!checker.enabled || !checker.instrumented) return;
  Region* region = shared_region(copy.dst);
  if (!region) return;
  const unsigned thread = run.current->linear;
  for (size_t i = 0; i < size_t(copy.bytes); i += next_cell(*region, copy.dst + i)) {
    Shadow& s = entry(run, *region, copy.dst + i);
    s.flags &= uint8_t(~(kPendingCopy | kUninitialisedRead));
    s.write_epoch = run.barrier_epoch;
    s.writer = uint16_t(thread);
    s.writer_sync = run.warps[thread / kWarpSize].sync_count;
    s.read_epoch = 0;
  }
}

}  // namespace db::emulation::detail

// ---- the -fsanitize=thread entry points -------------------------------------------------------
// GCC calls these from instrumented code; nothing here may throw (the calls are nothrow leaf
// calls): a fault is recorded, or the thread leaves (fail_from_hook) before an access that must
// not happen.
namespace {

using db::emulation::detail::active_block;

inline void on_access(const void* p, size_t bytes, bool write) {
  db::emulation::detail::BlockRun* run = active_block;
  if (!run || !run->current) [[likely]]
    return;
  const char* c = static_cast<const char*>(p);
  if (c >= static_cast<const char*>(__builtin_frame_address(0)) && c < run->current->stack_top)
    return;  // the kernel's own locals, on its fiber's stack
  db::emulation::detail::note_instrumented_access();
  db::emulation::detail::check_access(*run, run->current->linear, p, bytes, write, nullptr);
}

}  // namespace

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_ignore_thread_begin() {}
void __tsan_ignore_thread_end() {}

#define DB_TSAN_ACCESS(N)                            \
  void __tsan_read##N(void* p) {                     \
    on_access(p, N, false);                          \
  }                                                  \
  void __tsan_write##N(void* p) {                    \
    on_access(p, N, true);                           \
  }                                                  \
  void __tsan_unaligned_read##N(void* p) {           \
    on_access(p, N, false);                          \
  }                                                  \
  void __tsan_unaligned_write##N(void* p) {          \
    on_access(p, N, true);                           \
  }                                                  \
  void __tsan_volatile_read##N(void* p) {            \
    on_access(p, N, false);                          \
  }                                                  \
  void __tsan_volatile_write##N(void* p) {           \
    on_access(p, N, true);                           \
  }                                                  \
  void __tsan_unaligned_volatile_read##N(void* p) {  \
    on_access(p, N, false);                          \
  }                                                  \
  void __tsan_unaligned_volatile_write##N(void* p) { \
    on_access(p, N, true);                           \
  }                                                  \
  void __tsan_read##N##_pc(void* p, void*) {         \
    on_access(p, N, false);                          \
  }                                                  \
  void __tsan_write##N##_pc(void* p, void*) {        \
    on_access(p, N, true);                           \
  }
DB_TSAN_ACCESS(1)
DB_TSAN_ACCESS(2)
DB_TSAN_ACCESS(4)
DB_TSAN_ACCESS(8)
DB_TSAN_ACCESS(16)
#undef DB_TSAN_ACCESS

void __tsan_read_range(void* p, unsigned long bytes) {
  if (bytes) on_access(p, bytes, false);
}
void __tsan_write_range(void* p, unsigned long bytes) {
  if (bytes) on_access(p, bytes, true);
}
void __tsan_vptr_read(void**) {}
void __tsan_vptr_update(void**, void*) {}

// Atomics of instrumented code (std::atomic, shared_ptr counts, __atomic builtins), performed
// for real (sequentially consistent, whatever order was asked).
#define DB_TSAN_ATOMIC(N, T)                                                                \
  T __tsan_atomic##N##_load(const volatile T* a, int) {                                     \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
  }                                                                                         \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                  \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
  }                                                                                         \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                  \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                  \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                 \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {      \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {        \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {            \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    return c;                                                                               \
  }
DB_TSAN_ATOMIC(8, char)
DB_TSAN_ATOMIC(16, short)
DB_TSAN_ATOMIC(32, int)
DB_TSAN_ATOMIC(64, long)
#undef DB_TSAN_ATOMIC

// 16-byte atomics under one lock (no libatomic dependency); nothing of ours uses them.
static std::mutex atomic128_lock;
using int128 = __int128;
#define DB_TSAN_ATOMIC128_RMW(NAME, EXPR)                             \
  int128 __tsan_atomic128_##NAME(volatile int128* a, int128 v, int) { \
    std::lock_guard<std::mutex> hold(atomic128_lock);                 \
    const int128 old = *a;                                            \
    *a = (EXPR);                                                      \
    return old;                                                       \
  }
DB_TSAN_ATOMIC128_RMW(exchange, v)
DB_TSAN_ATOMIC128_RMW(fetch_add, old + v)
DB_TSAN_ATOMIC128_RMW(fetch_sub, old - v)
DB_TSAN_ATOMIC128_RMW(fetch_and, old& v)
DB_TSAN_ATOMIC128_RMW(fetch_or, old | v)
DB_TSAN_ATOMIC128_RMW(fetch_xor, old ^ v)
DB_TSAN_ATOMIC128_RMW(fetch_nand, ~(old& v))
#undef DB_TSAN_ATOMIC128_RMW
int128 __tsan_atomic128_load(const volatile int128* a, int) {
  std::lock_guard<std::mutex> hold(atomic128_lock);
  return *a;
}
void __tsan_atomic128_store(volatile int128* a, int128 v, int) {
  std::lock_guard<std::mutex> hold(atomic128_lock);
  *a = v;
}
int __tsan_atomic128_compare_exchange_strong(volatile int128* a, int128* c, int128 v, int, int) {
  std::lock_guard<std::mutex> hold(atomic128_lock);
  if (*a == *c) {
    *a = v;
    return 1;
  }
  *c = *a;
  return 0;
}
int __tsan_atomic128_compare_exchange_weak(volatile int128* a, int128* c, int128 v, int m, int f) {
  return __tsan_atomic128_compare_exchange_strong(a, c, v, m, f);
}

void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

}  // extern "C"
