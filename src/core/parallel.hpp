// Thread-parallel loops over rows whose reductions do not depend on the number of threads:
// rows are cut into fixed-size chunks, each chunk reduces into its own slot, and slots are
// summed in chunk order. Same inputs → bit-identical outputs on any thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace db {

constexpr int64_t kRowsPerChunk = 64;
// Rows per chunk of a per-row reduction on a GPU, where one warp takes a chunk
// (ops/cuda/launch.cuh for_each_row_sum_lanes): short, so that a few thousand rows fill the GPU.
// Here too for the host's emulation of that launch (tests/support/emulated_warp.hpp).
constexpr int64_t kRowsPerWarpChunk = 8;

inline int64_t chunk_count(int64_t rows) {
  return (rows + kRowsPerChunk - 1) / kRowsPerChunk;
}

// Calls body(chunk, row_begin, row_end) for every chunk, in parallel.
template <class Body>
void for_each_row_chunk(int64_t rows, Body body) {
  const int64_t chunks = chunk_count(rows);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    body(c, c * kRowsPerChunk, std::min(rows, (c + 1) * kRowsPerChunk));
}

// Adds the per-chunk partial vectors partial[c*width + j] into out[j] in chunk order.
template <class T, class Acc>
void add_chunk_partials(T* out, const std::vector<Acc>& partial, int64_t chunks, int64_t width) {
  for (int64_t j = 0; j < width; ++j) {
    Acc sum = 0;
    for (int64_t c = 0; c < chunks; ++c) sum += partial[c * width + j];
    out[j] += T(sum);
  }
}

}  // namespace db
