// depthbench bench: training throughput of one shape on random tokens — tokens/s, achieved
// GFLOP/s (PaLM FLOPs per token), and peak resident memory. A benchmark, not a test.
// `--backend cpu|cuda|auto` (or --train.backend) picks the backend; the CUDA branch runs the
// GPU Pre-LN step of src/ops/cuda/prenorm_step (Pre-LN only until the model-level integration).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/cpu/gemm.hpp"
#include "train/adamw.hpp"
#include "train/run_config.hpp"
#ifdef DEPTHBENCH_HAVE_CUDA
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/device.hpp"
#include "ops/cuda/prenorm_step.hpp"
#endif

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

#ifdef DEPTHBENCH_HAVE_CUDA
int run_gpu_bench(const RunConfig& config) {
  const ModelConfig& m = config.model;
  if (m.arch != "pre_ln" || m.qk_norm)
    throw Error(
        "bench --backend cuda runs the GPU Pre-LN step only (model.arch=pre_ln, no "
        "qk_norm) until the CUDA model integration lands; got arch=" +
        m.arch);
  const int device = cuda::select_device(MPI_COMM_WORLD);
  cuda::PrenormShape shape;
  shape.n_layer = m.n_layer;
  shape.d_model = m.d_model;
  shape.n_head = m.n_head;
  shape.n_kv_head = m.kv_heads();
  shape.ff = m.ff_dim();
  shape.vocab = m.vocab_size;
  shape.batch = config.recipe.micro_batch_sequences;
  shape.seq_len = config.recipe.seq_len;
  shape.norm_eps = m.norm_eps;
  shape.rope_theta = m.rope_theta;
  shape.init_std = m.init_std;
  shape.learning_rate = config.recipe.learning_rate;
  shape.beta1 = config.recipe.beta1;
  shape.beta2 = config.recipe.beta2;
  shape.adam_eps = config.recipe.adam_eps;
  shape.weight_decay = config.recipe.weight_decay;
  shape.grad_clip = config.recipe.grad_clip;
  cuda::PrenormStep model(shape, config.seed);
  const int T = shape.seq_len;
  const int64_t B = shape.batch;
  std::vector<int32_t> tokens(B * T);
  Rng rng(config.seed, "bench");
  for (auto& t : tokens) t = int32_t(rng.below(m.vocab_size));
  double loss = model.step(tokens.data());  // warm-up: cuBLASLt plans, allocator pools
  loss = model.step(tokens.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < config.recipe.steps; ++s) loss = model.step(tokens.data());
  CUDA_CHECK(cudaDeviceSynchronize());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens_per_second = double(B * T * config.recipe.steps) / seconds;
  const double flops = flops_per_token(m, T);
  const double mfu = flops * tokens_per_second / kPeakBf16Flops;
  std::printf("bench arch=%s L=%d d=%d T=%d B=%lld params=%lld backend=cuda device=\"%s\"\n",
              m.arch.c_str(), m.n_layer, m.d_model, T, (long long)B,
              (long long)model.parameter_count(), cuda::device_name(device).c_str());
  std::printf(
      "tokens_per_second=%.1f tflops=%.2f mfu=%.2f%% step_ms=%.2f "
      "device_memory_gib=%.2f loss=%.4f\n",
      tokens_per_second, flops * tokens_per_second * 1e-12, 100.0 * mfu,
      1e3 * seconds / config.recipe.steps, cuda::device_memory_used() / double(1 << 30), loss);
  std::printf(
      "mfu is achieved FLOP/s (6N + 12·L·d·T per token, PaLM) over the dense bf16 peak of "
      "989 TFLOP/s (H100/H200 SXM)\n");
  return 0;
}
#endif

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
                        "[--backend cpu|cuda|auto]"))
    return 0;
  const Backend backend = choose_backend(backend_option.empty() ? config.backend : backend_option);
  if (backend == Backend::cuda) {
#ifdef DEPTHBENCH_HAVE_CUDA
    return run_gpu_bench(config);
#else
    throw Error("the CUDA backend is unavailable in this build");  // choose_backend threw already
#endif
  }
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
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
