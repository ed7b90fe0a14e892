#include "ops/optimizer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#ifdef DEPTHBENCH_HAVE_CUDA
#include "ops/cuda/adamw.hpp"
#endif

namespace db {
namespace {

template <class T>
void adamw_update_host(T* values, const T* grads, float* m_state, float* v_state,
                       const uint8_t* decay, int64_t count, const AdamWUpdate& u) {
  const double bias1 = 1.0 - std::pow(u.beta1, double(u.step));
  const double bias2 = 1.0 - std::pow(u.beta2, double(u.step));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const double g = double(grads[i]) * u.clip_scale;
    const double m = u.beta1 * m_state[i] + (1 - u.beta1) * g;
    const double v = u.beta2 * v_state[i] + (1 - u.beta2) * g * g;
    m_state[i] = float(m);
    v_state[i] = float(v);
    double p = values[i];
    if (decay[i]) p -= u.lr * u.weight_decay * p;  // decoupled decay first, as torch.optim.AdamW
    p -= u.lr * (m / bias1) / (std::sqrt(v / bias2) + u.eps);
    values[i] = T(p);
  }
}

// Fixed chunks of 4096 values, each summed in order, then the chunks in order.
template <class T>
double sum_of_squares_host(const T* x, int64_t count) {
  const int64_t chunks = (count + 4095) / 4096;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0;
    for (int64_t i = c * 4096; i < std::min(count, (c + 1) * 4096); ++i) s += double(x[i]) * x[i];
    partial[c] = s;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

void require_host(MemorySpace space) {
  DB_REQUIRE(space == MemorySpace::host, "double-precision optimizer state lives on the host only");
}

}  // namespace

void adamw_update(MemorySpace space, float* values, const float* grads, float* m, float* v,
                  const uint8_t* decay, int64_t count, const AdamWUpdate& u) {
  if (space == MemorySpace::host) return adamw_update_host(values, grads, m, v, decay, count, u);
#ifdef DEPTHBENCH_HAVE_CUDA
  cuda::AdamWStep step;
  step.lr = u.lr;
  step.beta1 = u.beta1;
  step.beta2 = u.beta2;
  step.eps = u.eps;
  step.weight_decay = u.weight_decay;
  step.step = u.step;
  step.clip_scale = u.clip_scale;
  cuda::adamw_step(values, grads, m, v, decay, count, step);
#else
  throw Error("GPU optimizer state, but this build has no CUDA backend");
#endif
}

void adamw_update(MemorySpace space, double* values, const double* grads, float* m, float* v,
                  const uint8_t* decay, int64_t count, const AdamWUpdate& u) {
  require_host(space);
  adamw_update_host(values, grads, m, v, decay, count, u);
}

double sum_of_squares(MemorySpace space, const float* x, int64_t count) {
  if (space == MemorySpace::host) return sum_of_squares_host(x, count);
#ifdef DEPTHBENCH_HAVE_CUDA
  const double norm = cuda::global_norm(x, count);
  return norm * norm;
#else
  throw Error("GPU gradients, but this build has no CUDA backend");
#endif
}

double sum_of_squares(MemorySpace space, const double* x, int64_t count) {
  require_host(space);
  return sum_of_squares_host(x, count);
}

}  // namespace db
