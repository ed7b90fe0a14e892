// depthbench bench: training throughput of one shape on random tokens — tokens/s, achieved
// GFLOP/s (PaLM FLOPs per token), and peak resident memory. A benchmark, not a test.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "app/commands.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/cpu/gemm.hpp"
#include "train/adamw.hpp"
#include "train/run_config.hpp"

namespace db::app {

int run_bench_command(int argc, char** argv) {
  RunConfig config;
  config.recipe.steps = 5;
  config.recipe.seq_len = 256;
  config.recipe.micro_batch_sequences = 4;
  config.model.d_model = 256;
  config.model.n_layer = 4;
  if (!parse_run_config(argc, argv, config,
                        "usage: depthbench bench [--model.* shape] [--train.seq_len T] "
                        "[--train.micro_batch B] [--train.steps timed steps] [--train.threads N]"))
    return 0;
  const int threads = config.threads > 0 ? config.threads : cpu::cpu_threads();
  cpu::set_cpu_threads(threads);
  const int T = config.recipe.seq_len;
  const int64_t B = config.recipe.micro_batch_sequences;
  Model<float> model(config.model);
  model.initialize(config.seed);
  AdamW<float> optimizer(model.layout(), config.recipe);
  std::vector<int32_t> tokens(B * T);
  Rng rng(config.seed, "bench");
  for (auto& t : tokens) t = int32_t(rng.below(config.model.vocab_size));
  auto step = [&] {
    model.params().zero_grads();
    model.forward_backward(tokens.data(), B, T, 1.0 / (B * (T - 1)));
    optimizer.step(model.params().values(), model.params().grads(), 1e-3, 1.0);
  };
  step();  // warm-up: allocations, page faults
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < config.recipe.steps; ++s) step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens_per_second = double(B * T * config.recipe.steps) / seconds;
  const double flops = flops_per_token(config.model, T);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const ParameterCounts counts = count_parameters(config.model);
  std::printf("bench arch=%s L=%d d=%d T=%d B=%lld threads=%d params=%lld backend=cpu\n",
              config.model.arch.c_str(), config.model.n_layer, config.model.d_model, T,
              (long long)B, threads, (long long)counts.total);
  std::printf("tokens_per_second=%.1f gflops=%.2f step_ms=%.2f peak_rss_mib=%.1f\n",
              tokens_per_second, flops * tokens_per_second * 1e-9,
              1e3 * seconds / config.recipe.steps, usage.ru_maxrss / 1024.0);
  return 0;
}

}  // namespace db::app
