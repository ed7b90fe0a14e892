#include "train/memory_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "model/model.hpp"
#include "model/recompute.hpp"
#include "model/residual/registry.hpp"
#include "ops/backend.hpp"

namespace db {

MemoryEstimate estimate_memory(const RunConfig& config, int ranks_per_run) {
  const ModelConfig& m = config.model;
  const DesignInfo& design = find_design(m.arch);
  const double params = double(count_parameters(m).total);
  const double sequences = double(config.recipe.micro_batch_sequences);
  const double T = config.recipe.seq_len;
  const double tokens = sequences * T;
  const double head_rows = std::min(tokens, config.backend == "cuda" ? 4096.0 : 256.0);
  // Per token, what one block keeps for its backward: inside its attention and FFN cores q, k,
  // v, the attention output and the three SwiGLU products (≈ 4d + 3·ff values), outside them
  // norm caches and the residual (≈ 4d), plus the state the design's registry entry declares.
  // Every block keeps it, or under train.recompute = blocks one block at a time (the one being
  // re-run) and every block its input (the registry entry's recompute values). With bf16
  // storage the cores' values take 2 bytes and the cores keep a rounded copy of their inputs
  // (2d); the weights they read are the parameters' one bf16 copy (model/parameters.hpp),
  // counted with the weights: 2 bytes per parameter, whatever the micro-batch or recompute.
  const bool bf16 = stores_bf16(config.ops_options(), config.backend == "cuda");
  const double core_bytes = bf16 ? 2.0 * (4.0 * m.d_model + 3.0 * m.ff_dim() + 2.0 * m.d_model)
                                 : 4.0 * (4.0 * m.d_model + 3.0 * m.ff_dim());
  // Of the design's values, those it stores in the cores' type (MoDA's depth pools) take 2 bytes
  // under bf16 storage, those train.state_dtype = bf16 stores in bf16 (AttnRes's sources) under
  // it; the rest are fp32.
  const double stored = design.stored_values_per_token(m);
  const bool bf16_state = config.ops_options().bf16_state;
  const auto design_bytes = [&](double values, bool recompute) {
    const double narrow = bf16_state ? design.bf16_state_values_per_token(m, recompute) : 0.0;
    return 4.0 * (values - stored - narrow) + (bf16 ? 2.0 : 4.0) * stored + 2.0 * narrow;
  };
  const double block =
      core_bytes + 4.0 * 4.0 * m.d_model + design_bytes(design.state_values_per_token(m), false);
  const double per_token_blocks =
      parse_recompute(config.recompute) == Recompute::blocks
          ? m.n_layer * design_bytes(design.recompute_values_per_token(m), true) + block
          : m.n_layer * block;
  MemoryEstimate e;
  e.weights_bytes = 2 * 4 * params + (bf16 ? 2 * params : 0);  // values, gradients, bf16 copy
  e.optimizer_bytes = 2 * 4 * params;
  // At the head one chunk of logits, their gradient written over them (fp32; bf16 in a CUDA
  // bf16 run with bf16 storage) or, in a CUDA bf16 run with fp32 storage, into a bf16 chunk of
  // its own; a CUDA bf16 run also narrows W and the chunk's h to bf16 (ops/cuda/cross_entropy.hpp).
  const bool gpu_bf16_head = config.backend == "cuda" && config.precision == "bf16";
  const double logit_bytes = !gpu_bf16_head ? 4.0 : bf16 ? 2.0 : 4.0 + 2.0;
  const double narrowed = gpu_bf16_head ? 2.0 * (m.vocab_size + head_rows) * m.d_model : 0.0;
  e.activations_bytes =
      tokens * per_token_blocks + logit_bytes * head_rows * m.vocab_size + narrowed;
  // cuDNN's deterministic attention backward takes a bf16 dP [B, H, T, T] from the pool, one
  // attention call at a time (doc/cuda.md), when a bf16 CUDA run may pick cuDNN.
  const AttentionPath path = parse_attention_path(config.attention);
  if (config.backend == "cuda" && config.precision == "bf16" &&
      (path == AttentionPath::automatic || path == AttentionPath::cudnn))
    e.attention_workspace_bytes = 2.0 * sequences * m.n_head * T * T;
  // The CPU's gradient sum in rank order (ops/rank_order_sum.cpp) receives, for every range it
  // sums, this rank's slice (1/p of the range) from each of the p − 1 others and keeps those
  // parts between steps: (p − 1)/p of the fp32 gradients in host memory. (A CUDA run sums on the
  // device, or through host copies that are not device memory.)
  if (config.backend != "cuda" && ranks_per_run > 1)
    e.reducer_scratch_bytes = 4 * params * double(ranks_per_run - 1) / ranks_per_run;
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

void check_memory(const RunConfig& config, const Backend& backend, int ranks_per_run) {
  // Only a host backend sums gradients in host memory (train.backend = auto may be either).
  if (!backend.space().is_host()) ranks_per_run = 1;
  const MemoryEstimate e = estimate_memory(config, ranks_per_run);
  const double available = double(backend.memory_total_bytes());
  if (e.total() <= available) return;
  // Activations grow with the micro-batch; weights and optimizer state do not.
  RunConfig smaller = config;
  int64_t fits = config.recipe.micro_batch_sequences;
  while (fits > 0) {
    smaller.recipe.micro_batch_sequences = --fits;
    if (fits > 0 && estimate_memory(smaller, ranks_per_run).total() <= available) break;
  }
  const std::string advice =
      fits > 0 ? "; train.micro_batch = " + std::to_string(fits) + " would fit"
               : "; even one sequence per micro-batch does not fit: use fewer parameters or "
                 "a shorter train.seq_len";
  const std::string workspace =
      e.attention_workspace_bytes > 0
          ? ", cuDNN attention workspace " + format_gib(e.attention_workspace_bytes)
          : std::string();
  const std::string reducer = e.reducer_scratch_bytes > 0 ? ", MPI gradient sum scratch " +
                                                                format_gib(e.reducer_scratch_bytes)
                                                          : std::string();
  throw Error("this model needs at least " + format_gib(e.total()) + " per rank (weights " +
              format_gib(e.weights_bytes) + ", AdamW " + format_gib(e.optimizer_bytes) +
              ", activations " + format_gib(e.activations_bytes) + workspace + reducer +
              " at train.micro_batch = " + std::to_string(config.recipe.micro_batch_sequences) +
              "); this " +
              (backend.space().is_host() ? std::string("machine")
                                         : backend.name() + std::string(" device")) +
              " has " + format_gib(available) + advice);
}

}  // namespace db
