// depthbench bench: training throughput of one shape and design on random tokens — tokens/s,
// achieved GFLOP/s (PaLM FLOPs per token), MFU on a GPU, and peak memory. A benchmark, not a
// test. `--backend cpu|cuda|auto` (or --train.backend) picks the backend; both run the same
// model code and optimizer as training.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "train/adamw.hpp"
#include "train/run_config.hpp"

namespace db::app {
namespace {

// Dense bf16 peak of one H100/H200 SXM (vendor datasheet), the MFU denominator.
constexpr double kPeakBf16Flops = 989e12;

// Takes `--backend X` / `--backend=X` out of argv (the run config spells it --train.backend).
std::string take_backend_option(int& argc, char** argv) {
  std::string backend;
  int out = 0;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && !std::strcmp(argv[i], "--backend") && i + 1 < argc) {
      backend = argv[++i];
      continue;
    }
    if (i > 0 && !std::strncmp(argv[i], "--backend=", 10)) {
      backend = argv[i] + 10;
      continue;
    }
    argv[out++] = argv[i];
  }
  argc = out;
  return backend;
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  const std::string backend_option = take_backend_option(argc, argv);
  RunConfig config;
  config.recipe.steps = 5;
  config.recipe.seq_len = 256;
  config.recipe.micro_batch_sequences = 4;
  config.model.d_model = 256;
  config.model.n_layer = 4;
  if (!parse_run_config(argc, argv, config,
                        "usage: depthbench bench [--model.* shape] [--train.seq_len T] "
                        "[--train.micro_batch B] [--train.steps timed steps] [--train.threads N] "
                        "[--backend " +
                            backend_choices() + "]"))
    return 0;
  // The backend's device was chosen at start-up (main.cpp, start_backends).
  Backend& backend = choose_backend(backend_option.empty() ? config.backend : backend_option);
  const bool on_device = !backend.space().is_host();
  const int threads = config.threads > 0 ? config.threads : backend.host_threads();
  backend.set_host_threads(threads);
  const int T = config.recipe.seq_len;
  const int64_t B = config.recipe.micro_batch_sequences;
  Model<float> model(config.model, backend, config.ops_options());
  model.initialize(config.seed);
  AdamW<float> optimizer(model.layout(), config.recipe, model.space());
  std::vector<int32_t> tokens(B * T);
  Rng rng(config.seed, "bench");
  for (auto& t : tokens) t = int32_t(rng.below(config.model.vocab_size));
  double loss = 0;
  auto step = [&] {
    model.params().zero_grads();
    loss = model.forward_backward(tokens.data(), B, T, 1.0 / (B * (T - 1))) / (B * (T - 1));
    optimizer.step(model.params(), 1e-3, 1.0);
    global_norm(model.params().grad_buffer());  // as training does; also waits for the GPU
  };
  step();  // warm-up: allocations, page faults, cuBLASLt plans
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < config.recipe.steps; ++s) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens_per_second = double(B * T * config.recipe.steps) / seconds;
  const double flops = flops_per_token(config.model, T);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const ParameterCounts counts = count_parameters(config.model);
  std::printf("bench arch=%s L=%d d=%d T=%d B=%lld threads=%d params=%lld backend=%s%s\n",
              config.model.arch.c_str(), config.model.n_layer, config.model.d_model, T,
              (long long)B, threads, (long long)counts.total, backend.name(),
              on_device ? (" device=\"" + backend.device_name() + "\"").c_str() : "");
  std::printf("tokens_per_second=%.1f gflops=%.2f step_ms=%.2f peak_rss_mib=%.1f loss=%.4f",
              tokens_per_second, flops * tokens_per_second * 1e-9,
              1e3 * seconds / config.recipe.steps, usage.ru_maxrss / 1024.0, loss);
  if (on_device)
    std::printf(" mfu=%.2f%% device_memory_gib=%.2f",
                100.0 * flops * tokens_per_second / kPeakBf16Flops,
                backend.memory_used_bytes() / double(1 << 30));
  std::printf("\n");
  if (on_device)
    std::printf(
        "mfu is achieved FLOP/s (6N + 12·L·d·T per token, PaLM) over the dense bf16 peak of "
        "989 TFLOP/s (H100/H200 SXM)\n");
  return 0;
}

}  // namespace db::app
