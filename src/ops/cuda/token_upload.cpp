#include "ops/cuda/token_upload.hpp"

#include <cstring>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {

TokenUpload::~TokenUpload() {
  for (Slot& s : slots_) {  // never throws: the destructor may run while unwinding
    if (s.copied) {
      cudaEventSynchronize(s.copied);
      cudaEventDestroy(s.copied);
    }
    if (s.pinned) cudaFreeHost(s.pinned);
  }
}

void TokenUpload::upload(int32_t* dst, const int32_t* host, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  Slot& s = slots_[next_];
  next_ ^= 1;
  if (s.copied)
    CUDA_CHECK(cudaEventSynchronize(s.copied));  // its last copy has read it
  else
    CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
  if (s.capacity < count) {
    if (s.pinned) CUDA_CHECK(cudaFreeHost(s.pinned));
    s.pinned = nullptr;
    s.capacity = 0;
    CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.pinned), size_t(count) * sizeof(int32_t),
                             cudaHostAllocDefault));
    s.capacity = count;
  }
  std::memcpy(s.pinned, host, size_t(count) * sizeof(int32_t));
  CUDA_CHECK(cudaMemcpyAsync(dst, s.pinned, size_t(count) * sizeof(int32_t), cudaMemcpyHostToDevice,
                             stream));
  CUDA_CHECK(cudaEventRecord(s.copied, stream));
}

}  // namespace db::cuda
