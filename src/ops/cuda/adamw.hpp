// AdamW (torch.optim.AdamW semantics, as train/adamw.hpp) and the global gradient norm on the
// GPU. Master weights, gradients and both moments are fp32; the update runs in fp32.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// *norm_sq (device, double) = Σ grads² over `count` values: a fixed grid of per-block double
// partials summed by one block in a fixed order, so the result is reproducible.
void global_norm_squared(double* norm_sq, const float* grads, int64_t count,
                         cudaStream_t stream = nullptr);
// sqrt of the above, copied to the host (synchronises the stream).
double global_norm(const float* grads, int64_t count, cudaStream_t stream = nullptr);

struct AdamWStep {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  int64_t step = 1;                 // 1-based step number t (bias corrections 1 − βᵗ)
  double clip_scale = 1.0;          // used when norm_sq is null
  const double* norm_sq = nullptr;  // device Σg²: clip on the device, no host round trip
  double grad_clip = 0.0;  // with norm_sq: scale = grad_clip/‖g‖ when ‖g‖ > grad_clip > 0
};

// values -= lr·(wd·values [where decay[i]]) and the Adam update with gradients·clip scale.
// decay may be null (weight decay everywhere). values_bf16, when not null, receives the
// updated weights rounded to bf16 (the copy the bf16 GEMMs read).
void adamw_step(float* values, const float* grads, float* m, float* v, const uint8_t* decay,
                int64_t count, const AdamWStep& step, bf16* values_bf16 = nullptr,
                cudaStream_t stream = nullptr);

}  // namespace db::cuda
