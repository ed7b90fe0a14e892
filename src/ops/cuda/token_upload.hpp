// The micro-batch's token ids to the GPU without a host synchronisation (Ops::upload_tokens):
// a synchronous cudaMemcpy would wait for every micro-batch queued before it, so the host could
// never run ahead of the device. The ids are copied on the host into one of two page-locked
// slots and from there by cudaMemcpyAsync on the ops' stream; an event per slot says when its
// copy has run, and only then is the slot written again. The host may so run up to two
// micro-batches ahead; the caller's memory is free again on return.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace db::cuda {

class TokenUpload {
 public:
  TokenUpload() = default;
  ~TokenUpload();
  TokenUpload(const TokenUpload&) = delete;
  TokenUpload& operator=(const TokenUpload&) = delete;

  // dst: device memory; host: any host memory.
  void upload(int32_t* dst, const int32_t* host, int64_t count, cudaStream_t stream);

 private:
  struct Slot {
    int32_t* pinned = nullptr;
    int64_t capacity = 0;
    cudaEvent_t copied = nullptr;  // recorded after the slot's last copy
  };
  Slot slots_[2];
  int next_ = 0;
};

}  // namespace db::cuda
