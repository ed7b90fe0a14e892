// The out-of-line half of simt/device_api.hpp: barriers, warp collectives and atomics. This file
// is not instrumented by the hazard checker: the atomics' own read-modify-write is checked once
// as an atomic access (atomics do not race each other).
#include "emulation/simt/device_api.hpp"

#include <atomic>
#include <cstring>

#include "emulation/simt/block_run.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation::device {

using namespace detail;

namespace {

struct ShuffleGroup {
  static void complete(WarpGroup& g) {
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      if (!(g.mask >> lane & 1u)) continue;
      const int src = g.arg[lane];
      if (src < 0 || src >= int(kWarpSize) || !(g.mask >> src & 1u))
        throw DeviceFault(std::string(g.site.what) + " at " + g.site.file + ":" +
                          std::to_string(g.site.line) + ": lane " + std::to_string(lane) +
                          " reads lane " + std::to_string(src) +
                          ", which is not in the mask (its value is undefined)");
      std::memcpy(g.out[lane], g.in[src], g.bytes);
    }
  }
};

struct Vote {
  static void complete(WarpGroup& g) {
    unsigned votes = 0;
    for (unsigned lane = 0; lane < kWarpSize; ++lane)
      if ((g.mask >> lane & 1u) && *static_cast<const bool*>(g.in[lane])) votes |= 1u << lane;
    for (unsigned lane = 0; lane < kWarpSize; ++lane)
      if (g.mask >> lane & 1u) *static_cast<unsigned*>(g.out[lane]) = votes;
  }
};

}  // namespace

void syncthreads(const char* file, unsigned line) {
  BlockRun& run = running_block("__syncthreads");
  EmulatedThread& t = *run.current;
  t.state = ThreadState::at_barrier;
  t.site = WaitSite{"__syncthreads", file, line};
  // Every thread of the block must arrive (an exited thread never does: the block then cannot
  // make progress and the scheduler reports who waits and who exited).
  if (++run.at_barrier == run.n_threads) {
    run.at_barrier = 0;
    hazards_barrier(run);
    ++run.barrier_epoch;
    for (unsigned i = 0; i < run.n_threads; ++i) make_ready(run, i);
  }
  yield(run);
}

void syncwarp(unsigned mask, const char* file, unsigned line) {
  warp_collective(mask, WaitSite{"__syncwarp", file, line}, nullptr, nullptr, nullptr, 0);
}

void shuffle(unsigned mask, const void* value, void* result, size_t bytes, int src_lane,
             const char* what, const char* file, unsigned line) {
  warp_collective(mask, WaitSite{what, file, line}, &ShuffleGroup::complete, value, result,
                  src_lane, bytes);
}

unsigned ballot(unsigned mask, bool predicate, const char* what, const char* file, unsigned line) {
  unsigned votes = 0;
  warp_collective(mask, WaitSite{what, file, line}, &Vote::complete, &predicate, &votes, 0);
  return votes;
}

unsigned lane_id() {
  return running_block("lane_id").current->lane;
}

unsigned existing_lanes(unsigned mask) {
  BlockRun& run = running_block("existing_lanes");
  return mask & run.warps[run.current->warp].existing_lanes;
}

namespace {

template <class T>
void check(T* p) {
  if (BlockRun* run = active_block; run && run->current) check_atomic(*run, p, sizeof(T));
}

template <class T, class Op>
T update(T* p, Op op) {
  check(p);
  std::atomic_ref<T> ref(*p);
  T old = ref.load();
  while (!ref.compare_exchange_weak(old, op(old))) {
  }
  return old;
}

}  // namespace

float atomic_add(float* p, float v) {
  return update(p, [v](float a) { return a + v; });
}
double atomic_add(double* p, double v) {
  return update(p, [v](double a) { return a + v; });
}
int atomic_add(int* p, int v) {
  return update(p, [v](int a) { return int(unsigned(a) + unsigned(v)); });
}
unsigned atomic_add(unsigned* p, unsigned v) {
  return update(p, [v](unsigned a) { return a + v; });
}
unsigned long long atomic_add(unsigned long long* p, unsigned long long v) {
  return update(p, [v](unsigned long long a) { return a + v; });
}
int atomic_max(int* p, int v) {
  return update(p, [v](int a) { return a > v ? a : v; });
}
unsigned atomic_max(unsigned* p, unsigned v) {
  return update(p, [v](unsigned a) { return a > v ? a : v; });
}
unsigned long long atomic_max(unsigned long long* p, unsigned long long v) {
  return update(p, [v](unsigned long long a) { return a > v ? a : v; });
}
float atomic_max(float* p, float v) {
  return update(p, [v](float a) { return a > v ? a : v; });
}
double atomic_max(double* p, double v) {
  return update(p, [v](double a) { return a > v ? a : v; });
}
int atomic_cas(int* p, int compare, int v) {
  check(p);
  std::atomic_ref<int>(*p).compare_exchange_strong(compare, v);
  return compare;
}
unsigned atomic_cas(unsigned* p, unsigned compare, unsigned v) {
  check(p);
  std::atomic_ref<unsigned>(*p).compare_exchange_strong(compare, v);
  return compare;
}
unsigned long long atomic_cas(unsigned long long* p, unsigned long long compare,
                              unsigned long long v) {
  check(p);
  std::atomic_ref<unsigned long long>(*p).compare_exchange_strong(compare, v);
  return compare;
}

}  // namespace db::emulation::device
