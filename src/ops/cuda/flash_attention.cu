// Placeholder until the flash kernel's branch is merged (it replaces this file): no shape is
// supported, so `auto` never picks it and `flash` fails with a clear message.
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/flash_attention.hpp"

namespace db::cuda {

bool flash_attention_supports(const AttentionShape&) {
  return false;
}

void flash_attention_forward(__nv_bfloat16*, float*, const __nv_bfloat16*, const __nv_bfloat16*,
                             const __nv_bfloat16*, const AttentionShape&, cudaStream_t) {
  throw ::db::Error("flash attention: not built");
}

void flash_attention_backward(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*,
                              const __nv_bfloat16*, const float*, const __nv_bfloat16*,
                              const __nv_bfloat16*, const __nv_bfloat16*, const AttentionShape&,
                              cudaStream_t) {
  throw ::db::Error("flash attention: not built");
}

}  // namespace db::cuda
