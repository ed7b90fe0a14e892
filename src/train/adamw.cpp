#include "train/adamw.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "ops/backend.hpp"

namespace db {

template <class T>
double global_norm(std::span<const T> grads) {
  return std::sqrt(
      backend_of(MemorySpace::host).sum_of_squares(grads.data(), int64_t(grads.size())));
}

template <class T>
double global_norm(const ParameterStore<T>& params) {
  const Buffer<T>& grads = params.grad_buffer();
  const Backend& backend = backend_of(grads.space());
  if (!grads.on_host())  // the padding is zero and adds nothing
    return std::sqrt(backend.sum_of_squares(grads.data(), int64_t(grads.size())));
  // The host sums in fixed chunks of the array it is given: packing the parameters back to back
  // keeps the chunks, and so the rounding, of the unpadded buffer (results do not depend on
  // ParameterLayout::kAlignment).
  std::vector<T> packed;
  packed.reserve(size_t(params.layout().parameter_count()));
  for (const ParameterSpec& s : params.layout().specs())
    packed.insert(packed.end(), grads.data() + s.offset, grads.data() + s.offset + s.size());
  return std::sqrt(backend.sum_of_squares(packed.data(), int64_t(packed.size())));
}

template <class T>
AdamW<T>::AdamW(const ParameterLayout& layout, const Recipe& recipe, MemorySpace space)
    : recipe_(recipe) {
  std::vector<uint8_t> decay(layout.storage_size(), 0);
  for (const ParameterSpec& s : layout.specs())
    std::fill(decay.begin() + s.offset, decay.begin() + s.offset + s.size(),
              uint8_t(s.weight_decay));
  MemorySpaceScope scope(space);
  decay_.upload(decay);
  m_.assign_zeros(layout.storage_size());
  v_.assign_zeros(layout.storage_size());
}

template <class T>
void AdamW<T>::step(ParameterStore<T>& params, double lr, double clip_scale) {
  Buffer<T>& values = params.value_buffer();
  DB_REQUIRE(values.space() == m_.space(), "optimizer state and parameters in different memory");
  ++t_;
  const AdamWUpdate update{lr, recipe_.beta1, recipe_.beta2, recipe_.adam_eps, recipe_.weight_decay,
                           t_, clip_scale};
  // Every element of the bf16 copy (when the store keeps one) is rewritten from the updated
  // values, so it is fresh afterwards whatever it held before.
  bfloat16* copy = params.bf16_copy_for_write();
  backend_of(values.space())
      .adamw_update(values.data(), params.grad_buffer().data(), m_.data(), v_.data(), decay_.data(),
                    int64_t(values.size()), update, copy);
  if (copy) params.bf16_copy_written();
}

template <class T>
void AdamW<T>::set_moments(const std::vector<float>& m, const std::vector<float>& v) {
  DB_REQUIRE(m.size() == m_.size() && v.size() == v_.size(),
             "optimizer state of " + std::to_string(m.size()) + " values for " +
                 std::to_string(m_.size()) + " parameters");
  MemorySpaceScope scope(m_.space());
  m_.upload(m);
  v_.upload(v);
}

template double global_norm<float>(std::span<const float>);
template double global_norm<double>(std::span<const double>);
template double global_norm<float>(const ParameterStore<float>&);
template double global_norm<double>(const ParameterStore<double>&);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace db
