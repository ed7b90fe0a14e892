// A GPU warp emulated on the host, so that the lane functors (ops/lanes.hpp) run their 32-lane
// paths without a GPU: the lane striding, the per-lane register arrays sized by kCount, the
// "source i kept by lane i mod 32" logic, the leader-only writes and the warp sums. 32
// std::threads, one per lane, run a functor with EmulatedWarpLanes, which has WarpLanes'
// interface (ops/cuda/kernel_util.cuh) and its sum: the butterfly of ops/lanes.hpp, the very
// function warp_sum runs, with the shuffle replaced by an exchange between the threads, so the
// sum of the same per-lane partials has the GPU's bits.
//
// The launches are those of ops/cuda/launch.cuh: emulated_row_lanes runs f(r, lanes) for every
// row (for_each_row_lanes: a warp per row), emulated_row_sum_lanes mirrors for_each_row_sum_lanes
// (a warp per chunk of kRowsPerWarpChunk rows into the chunk's partials, then the chunks' partials
// added in order per column).
//
// What the GPU would get wrong and the emulation reports (std::logic_error): lanes that call sum
// unevenly (a lane skips a sum or leaves early: a warp that hangs or adds stale registers), and
// two lanes adding to the same column of a row reduction's sums (a race on a GPU).
//
// Not emulated: the device side of `#if defined(__CUDA_ARCH__)` (register_loop_bound's constant
// trip count, keep_logit's unrolled store), timing, shared memory, other warps, and the
// compiler's contraction of a·b + c (nvcc and GCC decide it each on their own).
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/parallel.hpp"
#include "ops/lanes.hpp"
#include "ops/launch.hpp"

namespace db::test {

// What the lanes of one emulated warp share: a barrier, and the values they exchange.
class EmulatedWarp {
 public:
  // Lane `lane`'s value v replaced by that of lane `lane` ^ offset, as __shfl_xor_sync(full mask,
  // v, offset). Every lane must call it at the same point (the GPU's warp-synchronous shuffle);
  // a lane that has not (left early, or is at another exchange) is recorded as a divergence.
  template <class V>
  V exchange(int lane, V v, int offset) {
    static_assert(std::is_arithmetic_v<V> && sizeof(V) <= sizeof(uint64_t),
                  "a shuffle moves a scalar of at most 8 bytes");
    // Two sets of slots, used in turn: a lane writes its next value while its partner may still
    // be reading the last one, never the one before (it has passed the barrier since).
    const uint64_t at = count_[lane]++;
    Slot& mine = slots_[at % 2][lane];
    mine.exchange = at;
    mine.offset = offset;
    std::memcpy(&mine.value, &v, sizeof v);
    barrier_.arrive_and_wait();
    const Slot& theirs = slots_[at % 2][lane ^ offset];
    if (theirs.exchange != at || theirs.offset != offset) diverged_ = true;
    V partner;
    std::memcpy(&partner, &theirs.value, sizeof partner);
    return partner;
  }

  // Runs body(lanes) on one thread per lane and waits for them; rethrows the first exception of a
  // lane, then reports a divergence.
  template <class Body>
  void run(const Body& body);

 private:
  struct Slot {
    uint64_t exchange = ~uint64_t(0);
    int offset = 0;
    uint64_t value = 0;
  };
  std::barrier<> barrier_{kWarpLanes};
  Slot slots_[2][kWarpLanes];
  uint64_t count_[kWarpLanes] = {};  // each lane's exchanges so far
  std::atomic<bool> diverged_{false};
};

// WarpLanes' interface (ops/lanes.hpp) for one lane of an emulated warp.
struct EmulatedWarpLanes {
  static constexpr int kCount = kWarpLanes;
  int lane;
  EmulatedWarp* warp;
  int first() const { return lane; }
  int step() const { return kCount; }
  bool leader() const { return lane == 0; }
  template <class A>
  A sum(A part) const {
    return butterfly_sum(part, [this](A v, int offset) { return warp->exchange(lane, v, offset); });
  }
};

template <class Body>
void EmulatedWarp::run(const Body& body) {
  std::exception_ptr errors[kWarpLanes];
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < kWarpLanes; ++lane)
    lanes.emplace_back([&, lane] {
      try {
        body(EmulatedWarpLanes{lane, this});
      } catch (...) {
        errors[lane] = std::current_exception();
      }
      barrier_.arrive_and_drop();  // the lanes still running exchange without this one
    });
  for (std::thread& t : lanes) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  const bool even =
      std::all_of(count_, count_ + kWarpLanes, [&](uint64_t c) { return c == count_[0]; });
  if (diverged_ || !even)
    throw std::logic_error(
        "emulated warp: its lanes called sum() at different points (a GPU warp would hang or "
        "add stale values)");
}

// body(lanes) on a fresh emulated warp.
template <class Body>
void run_on_emulated_warp(const Body& body) {
  EmulatedWarp warp;
  warp.run(body);
}

// for_each_row_lanes on emulated warps: f(r, lanes) for every row r < rows. One warp takes the
// rows in turn (the GPU gives each row a warp of its own; rows do not depend on each other).
template <class F>
void emulated_row_lanes(int64_t rows, const F& f) {
  run_on_emulated_warp([&](const EmulatedWarpLanes& lanes) {
    for (int64_t r = 0; r < rows; ++r) f(r, lanes);
  });
}

// for_each_row_sum_lanes as ops/cuda/launch.cuh runs it (chunk_sums_lanes_kernel, then
// add_partials_kernel): a warp per chunk of kRowsPerWarpChunk rows calls f(r, sums, lanes) for
// them in order, into the chunk's row of partials (zeroed first), then each column adds the
// chunks' partials in chunk order, in double, and that once into its target. Each lane sums into
// a copy of the chunk's partials of its own here, so that a column that two lanes add to (a race
// on a GPU) is reported rather than silently lost; a column with one writer gets the GPU's bits.
template <class T, class F>
void emulated_row_sum_lanes(int64_t rows, const SumTargets<T>& targets, const F& f) {
  const int width = targets.width();
  const int64_t chunks = (rows + kRowsPerWarpChunk - 1) / kRowsPerWarpChunk;
  const size_t size = size_t(chunks) * width;
  std::vector<std::vector<double>> lane_partials(kWarpLanes, std::vector<double>(size, 0.0));
  run_on_emulated_warp([&](const EmulatedWarpLanes& lanes) {
    for (int64_t c = 0; c < chunks; ++c) {
      double* sums = lane_partials[lanes.first()].data() + c * width;
      const int64_t end = std::min(rows, (c + 1) * kRowsPerWarpChunk);
      for (int64_t r = c * kRowsPerWarpChunk; r < end; ++r) f(r, sums, lanes);
    }
  });
  std::vector<double> partials(size, 0.0);
  for (size_t i = 0; i < size; ++i) {
    int writers = 0;
    for (const std::vector<double>& lane : lane_partials)
      if (lane[i] != 0.0) {
        partials[i] = lane[i];
        ++writers;
      }
    if (writers > 1)
      throw std::logic_error("emulated warp: " + std::to_string(writers) +
                             " lanes add to row-sum column " + std::to_string(i % width) +
                             " (a race on a GPU)");
  }
  for (int c = 0; c < width; ++c) {
    double sum = 0;
    for (int64_t k = 0; k < chunks; ++k) sum += partials[size_t(k) * width + c];
    targets.add_to(c, sum);
  }
}

}  // namespace db::test
