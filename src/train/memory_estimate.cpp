#include "train/memory_estimate.hpp"

#include <unistd.h>

#include <cstdio>

#include "core/error.hpp"
#include "model/model.hpp"

namespace db {

MemoryEstimate estimate_memory(const RunConfig& config) {
  const ModelConfig& m = config.model;
  const double params = double(count_parameters(m).total);
  const double tokens = double(config.recipe.micro_batch_sequences) * config.recipe.seq_len;
  const bool bf16 = config.backend == "cuda";
  const double activation_bytes = bf16 ? 2 : 4;
  // Per token and block: q, k, v, attention output, norm caches and the residual (≈ 8d) and the
  // three SwiGLU products (3·ff); per token at the head: logits and their gradient (2V, fp32).
  const double per_token_blocks = double(m.n_layer) * (8.0 * m.d_model + 3.0 * m.ff_dim());
  MemoryEstimate e;
  e.weights_bytes = (2 * 4 + (bf16 ? 2 : 0)) * params;
  e.optimizer_bytes = 2 * 4 * params;
  e.activations_bytes =
      tokens * (activation_bytes * per_token_blocks + 4 * 2.0 * double(m.vocab_size));
  return e;
}

double machine_memory_bytes() {
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
}

std::string format_gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1 << 30));
  return text;
}

void check_memory(const RunConfig& config) {
  const MemoryEstimate e = estimate_memory(config);
  const double available = machine_memory_bytes();
  DB_REQUIRE(e.total() <= available,
             "this model needs at least " + format_gib(e.total()) + " per rank (weights " +
                 format_gib(e.weights_bytes) + ", AdamW " + format_gib(e.optimizer_bytes) +
                 ", activations " + format_gib(e.activations_bytes) +
                 " at train.micro_batch = " + std::to_string(config.recipe.micro_batch_sequences) +
                 "); this machine has " + format_gib(available));
}

}  // namespace db
