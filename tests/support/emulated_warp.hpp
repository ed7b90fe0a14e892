// A GPU warp emulated on the host, so that the lane functors (ops/lanes.hpp) run their 32-lane
// paths without a GPU: the lane striding, the per-lane register arrays sized by kCount, the
// "source i kept by lane i mod 32" logic, the leader-only writes and the warp sums. 32
// std::threads, one per lane, run a functor with EmulatedWarpLanes, which has WarpLanes'
// interface (ops/cuda/kernel_util.cuh) and its sum: the butterfly of ops/lanes.hpp, the very
// function warp_sum runs, its shuffles answered from the partials the lanes exchange (one
// barrier per sum), so the sum of the same per-lane partials has the GPU's bits.
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
// The GPU's form of the loops over a lane's register arrays (register_loop_bound's constant trip
// count, keep_logit's constant-index store) runs where a test is built with
// DB_EMULATE_DEVICE_LOOPS (core/device_unroll.hpp). Not emulated: the unrolling itself, timing,
// shared memory, other warps, and the compiler's contraction of a·b + c (nvcc and GCC decide it
// each on their own).
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/parallel.hpp"
#include "ops/lanes.hpp"
#include "ops/launch.hpp"

namespace db::test {

class EmulatedWarp;

// WarpLanes' interface (ops/lanes.hpp) for one lane of an emulated warp.
struct EmulatedWarpLanes {
  static constexpr int kCount = kWarpLanes;
  int lane;
  EmulatedWarp* warp;
  int first() const { return lane; }
  int step() const { return kCount; }
  bool leader() const { return lane == 0; }
  template <class A>
  A sum(A part) const;
};

// The 32 lane threads, started once and given one body after another, and what they share
// while they run one: a barrier, and the partials of the current sum.
class EmulatedWarp {
 public:
  EmulatedWarp() {
    for (int lane = 0; lane < kWarpLanes; ++lane)
      threads_.emplace_back([this, lane] { serve(lane); });
  }
  ~EmulatedWarp() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Runs body(lanes) on every lane and waits for them; rethrows the first exception of a lane,
  // then reports lanes that summed unevenly.
  void run(const std::function<void(const EmulatedWarpLanes&)>& body);

  // Every lane's partial of a sum, `v` being lane `lane`'s: the registers that the GPU's shuffles
  // read. Every lane must call it at the same point (the shuffles are warp-synchronous); a lane
  // that has not (left early, or is at another sum) is recorded as a divergence.
  template <class V>
  std::array<V, kWarpLanes> gather(int lane, V v);

 private:
  void serve(int lane);

  struct Slot {
    uint64_t sum = ~uint64_t(0);  // which of the lane's sums
    uint64_t value = 0;
  };
  std::mutex mutex_;
  std::condition_variable start_, done_;
  uint64_t runs_ = 0;  // bodies given so far
  int running_ = 0;    // lanes still in the current body
  bool stopping_ = false;
  const std::function<void(const EmulatedWarpLanes&)>* body_ = nullptr;
  std::exception_ptr errors_[kWarpLanes];
  std::optional<std::barrier<>> barrier_;  // fresh for each body: a lane that ends drops out
  Slot slots_[2][kWarpLanes];
  uint64_t sums_[kWarpLanes] = {};  // each lane's sums in the current body
  std::atomic<bool> diverged_{false};
  std::vector<std::thread> threads_;  // last: started once the rest is constructed
};

inline void EmulatedWarp::serve(int lane) {
  uint64_t served = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || runs_ != served; });
      if (stopping_) return;
      served = runs_;
    }
    try {
      (*body_)(EmulatedWarpLanes{lane, this});
    } catch (...) {
      errors_[lane] = std::current_exception();
    }
    barrier_->arrive_and_drop();  // the lanes still running sum without this one
    std::lock_guard lock(mutex_);
    if (--running_ == 0) done_.notify_one();
  }
}

inline void EmulatedWarp::run(const std::function<void(const EmulatedWarpLanes&)>& body) {
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    barrier_.emplace(kWarpLanes);
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      errors_[lane] = nullptr;
      sums_[lane] = 0;
      slots_[0][lane] = slots_[1][lane] = Slot{};
    }
    diverged_ = false;
    running_ = kWarpLanes;
    ++runs_;
  }
  start_.notify_all();
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
  }
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
  const bool even =
      std::all_of(sums_, sums_ + kWarpLanes, [&](uint64_t c) { return c == sums_[0]; });
  if (diverged_ || !even)
    throw std::logic_error(
        "emulated warp: its lanes called sum() at different points (a GPU warp would hang or "
        "add stale values)");
}

template <class V>
std::array<V, kWarpLanes> EmulatedWarp::gather(int lane, V v) {
  static_assert(std::is_arithmetic_v<V> && sizeof(V) <= sizeof(uint64_t),
                "a shuffle moves a scalar of at most 8 bytes");
  // Two sets of slots, used in turn: a lane writes its next partial while the others may still
  // be reading the last ones, never the ones before (they have passed the barrier since).
  const uint64_t at = sums_[lane]++;
  Slot(&slots)[kWarpLanes] = slots_[at % 2];
  slots[lane].sum = at;
  std::memcpy(&slots[lane].value, &v, sizeof v);
  barrier_->arrive_and_wait();
  std::array<V, kWarpLanes> all;
  for (int l = 0; l < kWarpLanes; ++l) {
    if (slots[l].sum != at) diverged_ = true;
    std::memcpy(&all[l], &slots[l].value, sizeof(V));
  }
  return all;
}

// sum runs butterfly_sum itself, warp_sum's loop: its shuffle of offset o returns the value that
// lane ^ o holds at that step, which this lane follows for all 32 lanes from the gathered
// partials (at each step every lane adds its partner's value, v + partner, as butterfly_sum
// does; checked against this lane's own value at every step).
template <class A>
A EmulatedWarpLanes::sum(A part) const {
  std::array<A, kWarpLanes> values = warp->gather(lane, part);
  return butterfly_sum(part, [&](A v, int offset) {
    if (std::memcmp(&v, &values[lane], sizeof v) != 0)
      throw std::logic_error("emulated warp: butterfly_sum no longer adds v + partner");
    const A partner = values[lane ^ offset];
    std::array<A, kWarpLanes> next;
    for (int l = 0; l < kWarpLanes; ++l) next[l] = values[l] + values[l ^ offset];
    values = next;
    return partner;
  });
}

// body(lanes) on every lane of the test program's emulated warp (its threads are started once).
inline void run_on_emulated_warp(const std::function<void(const EmulatedWarpLanes&)>& body) {
  static EmulatedWarp warp;
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
