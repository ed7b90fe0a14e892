// The generic launchers: how a design's own arithmetic reaches every backend without a method
// of its own in Ops<T> (doc/backends.md, "Design arithmetic"). A design writes its per-element
// or per-row math as a functor whose call operator is DB_HD (__host__ __device__), and launches
// it here with the memory space its buffers live in (ops.space()):
//   - host: an OpenMP loop on this thread's pool;
//   - cuda: a kernel template instantiated for the functor, in this translation unit. That is
//     why every file that launches a functor is compiled by nvcc when the CUDA backend is built
//     (CMake: depthbench_device_sources; or against the emulated device, DB_KERNELS in
//     core/host_device.hpp); compiled by a plain C++ compiler, the device branch only throws.
// The CPU tests therefore run the very function body the GPU runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/host_device.hpp"
#include "core/memory.hpp"
#include "core/parallel.hpp"
#include "ops/lanes.hpp"
#include "ops/launch_timer.hpp"

#if DB_KERNELS
#include "ops/cuda/launch.cuh"
#endif

namespace db {

// The parameter gradients a per-row reduction adds to: up to kMaxSegments arrays, concatenated
// into one row of `width()` sums (column c belongs to the first segment k with c < end[k]).
template <class T>
struct SumTargets {
  static constexpr int kMaxSegments = 4;
  T* ptr[kMaxSegments] = {};
  int end[kMaxSegments] = {};
  int count = 0;
  SumTargets& add(T* target, int values) {
    DB_REQUIRE(count < kMaxSegments, "SumTargets: at most 4 target arrays");
    ptr[count] = target;
    end[count] = (count ? end[count - 1] : 0) + values;
    ++count;
    return *this;
  }
  DB_HD int width() const { return count ? end[count - 1] : 0; }
  // Adds `sum` to column c.
  DB_HD void add_to(int c, double sum) const {
    int k = 0;
    while (c >= end[k]) ++k;
    T* p = ptr[k] + (c - (k ? end[k - 1] : 0));
    *p = T(*p + sum);
  }
};

namespace detail {
// for_each_index without the launch timer (a launcher's own inner loop).
template <class F>
void index_loop(MemorySpace space, int64_t count, const F& f) {
  if (space == MemorySpace::host) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) f(i);
    return;
  }
#if DB_KERNELS
  cuda_launch::for_each_index(count, f);
#else
  throw Error(
      "for_each_index on device memory from a file not compiled by nvcc (CMake: "
      "depthbench_device_sources)");
#endif
}
}  // namespace detail

// Every launcher below runs inside timed_launch (ops/launch_timer.hpp): untimed unless
// `depthbench bench --breakdown` times its step.

// f(i) for every i in [0, count), in parallel (no order between indices).
template <class F>
void for_each_index(MemorySpace space, int64_t count, const F& f) {
  if (count <= 0) return;
  timed_launch<F>([&] { detail::index_loop(space, count, f); });
}

// f(r, e) for every row r < rows and value e < width: on the host a parallel loop over rows with
// the values of a row in an inner loop (which the compiler can vectorise), on a GPU one thread
// per value.
template <class F>
struct RowElement {
  F f;
  int width;
  DB_HD void operator()(int64_t i) const { f(i / width, int(i % width)); }
};
template <class F>
void for_each_row_element(MemorySpace space, int64_t rows, int width, const F& f) {
  if (rows <= 0 || width <= 0) return;
  timed_launch<F>([&] {
    if (space == MemorySpace::host) {
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r)
        for (int e = 0; e < width; ++e) f(r, e);
      return;
    }
    detail::index_loop(space, rows * width, RowElement<F>{f, width});
  });
}

// f(r, lanes) for every row r < rows, in parallel (no order between rows); lanes: ops/lanes.hpp.
template <class F>
void for_each_row_lanes(MemorySpace space, int64_t rows, const F& f) {
  if (rows <= 0) return;
  timed_launch<F>([&] {
    if (space == MemorySpace::host) {
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) f(r, HostLanes{});
      return;
    }
#if DB_KERNELS
    cuda_launch::for_each_row_lanes(rows, f);
#else
    throw Error(
        "for_each_row_lanes on device memory from a file not compiled by nvcc (CMake: "
        "depthbench_device_sources)");
#endif
  });
}

namespace detail {
// The host side of the row sums below: g(r, sums) per row.
template <class T, class G>
void host_row_sums(int64_t rows, const SumTargets<T>& targets, const G& g) {
  const int width = targets.width();
  const int64_t chunks = chunk_count(rows);
  std::vector<double> partials(size_t(chunks) * width, 0.0);
  for_each_row_chunk(rows, [&](int64_t c, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) g(r, &partials[size_t(c) * width]);
  });
  for (int j = 0; j < width; ++j) {
    double sum = 0;
    for (int64_t c = 0; c < chunks; ++c) sum += partials[size_t(c) * width + j];
    targets.add_to(j, sum);
  }
}
}  // namespace detail

// Per row with a reduction: f(r, sums) computes row r's own outputs and adds its contributions
// to the targets into sums[0 .. targets.width()) (doubles). Rows are cut into chunks of
// kRowsPerChunk, each chunk sums into its own row of partials, and the partials are added in
// chunk order, then once into each target: the same bits on any thread count, on either backend.
template <class T, class F>
void for_each_row_sum(MemorySpace space, int64_t rows, const SumTargets<T>& targets, const F& f) {
  if (rows <= 0) return;
  timed_launch<F>([&] {
    if (space == MemorySpace::host) return detail::host_row_sums(rows, targets, f);
#if DB_KERNELS
    cuda_launch::for_each_row_sum(rows, targets, f);
#else
    throw Error(
        "for_each_row_sum on device memory from a file not compiled by nvcc (CMake: "
        "depthbench_device_sources)");
#endif
  });
}

// for_each_row_sum for a functor f(r, sums, lanes) whose row is shared by lanes (above): a lane
// adds only to the sums of its own columns, so each column's sum still runs over the rows in
// order. On a GPU one warp takes a chunk of rows (the chunks are shorter there, for parallelism,
// so the GPU's bits differ from the host's but not from run to run).
template <class T, class F>
void for_each_row_sum_lanes(MemorySpace space, int64_t rows, const SumTargets<T>& targets,
                            const F& f) {
  if (rows <= 0) return;
  timed_launch<F>([&] {
    if (space == MemorySpace::host)
      return detail::host_row_sums(rows, targets,
                                   [&](int64_t r, double* sums) { f(r, sums, HostLanes{}); });
#if DB_KERNELS
    cuda_launch::for_each_row_sum_lanes(rows, targets, f);
#else
    throw Error(
        "for_each_row_sum_lanes on device memory from a file not compiled by nvcc (CMake: "
        "depthbench_device_sources)");
#endif
  });
}

// A fixed-capacity list of pointers, passed by value into a functor (so into a kernel's
// parameters: no host array to copy to the device at every launch).
template <class P, int Capacity>
struct PointerList {
  P at[Capacity] = {};
  int size = 0;
  static constexpr int capacity = Capacity;
  PointerList() = default;
  explicit PointerList(const std::vector<P>& values) {
    DB_REQUIRE(int(values.size()) <= Capacity, std::to_string(values.size()) +
                                                   " pointers exceed the capacity " +
                                                   std::to_string(Capacity));
    for (P p : values) at[size++] = p;
  }
  DB_HD P operator[](int i) const { return at[i]; }
};

}  // namespace db
