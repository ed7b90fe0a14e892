// The optimizer's element-wise work in host memory: the AdamW update and the sum of squares
// behind the global gradient norm (Backend::adamw_update, Backend::sum_of_squares).
#pragma once
#include <cstdint>

#include "ops/backend.hpp"

namespace db::cpu {

// values_bf16 (may be null): the updated values rounded to bf16, written in the same pass.
template <class T>
void adamw_update(T* values, const T* grads, float* m, float* v, const uint8_t* decay,
                  int64_t count, const AdamWUpdate& u, bfloat16* values_bf16 = nullptr);

// Fixed chunks of 4096 values, each summed in order, then the chunks in order: the same value
// on any thread count.
template <class T>
double sum_of_squares(const T* x, int64_t count);

}  // namespace db::cpu
