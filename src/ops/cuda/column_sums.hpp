// Deterministic sums over rows for the parameter gradients of per-token math (HC and mHC
// coefficients, the AttnRes query and key gain): rows are cut into fixed chunks of
// kRowsPerChunk (as core/parallel.hpp on the CPU), each chunk's sum is one partial, and the
// partials are added in chunk order. No atomics: the same inputs give the same bits.
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

constexpr int64_t kRowsPerChunk = 64;

inline int64_t chunk_count(int64_t rows) {
  return (rows + kRowsPerChunk - 1) / kRowsPerChunk;
}

// Where the columns of a sum go: column c belongs to the first segment k with c < end[k] and
// is added (as float) to ptr[k][c − end[k−1]].
struct ColumnTargets {
  static constexpr int kMaxSegments = 4;
  float* ptr[kMaxSegments] = {};
  int end[kMaxSegments] = {};
  int count = 0;
  void add(float* target, int columns) {
    ptr[count] = target;
    end[count] = (count ? end[count - 1] : 0) + columns;
    ++count;
  }
  DB_HD int columns() const { return count ? end[count - 1] : 0; }
};

// targets += Σ_r contributions[r·columns + c] (double, [rows, columns] on the device).
void add_column_sums(const double* contributions, int64_t rows, const ColumnTargets& targets,
                     cudaStream_t stream);
// targets += Σ_chunk partials[chunk·columns + c] in chunk order (double, [chunks, columns]).
void add_chunk_partials(const double* partials, int64_t chunks, const ColumnTargets& targets,
                        cudaStream_t stream);

}  // namespace db::cuda
