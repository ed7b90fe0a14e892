#include "ops/cuda/column_sums.hpp"
#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {
namespace {

constexpr int kThreads = 128;

// One block per (chunk, column tile): partial[chunk, c] = Σ of the chunk's rows, in row order.
__global__ void chunk_partials_kernel(double* __restrict__ partials,
                                      const double* __restrict__ contributions, int64_t rows,
                                      int columns) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  const int64_t begin = int64_t(blockIdx.x) * kRowsPerChunk;
  const int64_t end = min(rows, begin + kRowsPerChunk);
  double sum = 0;
  for (int64_t r = begin; r < end; ++r) sum += contributions[r * columns + c];
  partials[blockIdx.x * int64_t(columns) + c] = sum;
}

// One thread per column: the chunks in order, then one float add into the target.
__global__ void add_partials_kernel(ColumnTargets targets, const double* __restrict__ partials,
                                    int64_t chunks) {
  const int columns = targets.columns();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  double sum = 0;
  for (int64_t k = 0; k < chunks; ++k) sum += partials[k * columns + c];
  int segment = 0;
  while (c >= targets.end[segment]) ++segment;
  const int first = segment ? targets.end[segment - 1] : 0;
  targets.ptr[segment][c - first] += float(sum);
}

}  // namespace

void add_chunk_partials(const double* partials, int64_t chunks, const ColumnTargets& targets,
                        cudaStream_t stream) {
  const int columns = targets.columns();
  if (columns == 0 || chunks == 0) return;
  add_partials_kernel<<<(columns + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      targets, partials, chunks);
  CUDA_CHECK_LAUNCH();
}

void add_column_sums(const double* contributions, int64_t rows, const ColumnTargets& targets,
                     cudaStream_t stream) {
  const int columns = targets.columns();
  if (columns == 0 || rows <= 0) return;
  const int64_t chunks = chunk_count(rows);
  double* partials = nullptr;
  CUDA_CHECK(cudaMallocAsync(&partials, size_t(chunks) * columns * sizeof(double), stream));
  const dim3 grid(unsigned(chunks), unsigned((columns + kThreads - 1) / kThreads));
  chunk_partials_kernel<<<grid, kThreads, 0, stream>>>(partials, contributions, rows, columns);
  CUDA_CHECK_LAUNCH();
  add_chunk_partials(partials, chunks, targets, stream);
  CUDA_CHECK(cudaFreeAsync(partials, stream));
}

}  // namespace db::cuda
