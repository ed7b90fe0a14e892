// depthbench bench: training throughput of one shape and design on random tokens — tokens/s,
// achieved GFLOP/s (PaLM FLOPs per token), MFU, step time and peak memory; `--breakdown` adds
// the time of every op in one more step. A benchmark, not a test. `--backend cpu|cuda|auto`
// (or --train.backend) picks the backend; both run the same model code and optimizer as
// training. bench/gpu_speed.sh runs it for every design and prints the table (doc/performance.md).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "app/bench_report.hpp"
#include "app/commands.hpp"
#include "app/installed_files.hpp"
#include "core/buffer.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "ops/launch_timer.hpp"
#include "sweep/cpu_throughput.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/adamw.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

namespace db::app {
namespace {

// Dense bf16 peak of one H100/H200 SXM (vendor datasheet), the default MFU denominator.
constexpr double kPeakBf16Tflops = 989;

// bench's own options, taken out of argv before the run-config parser sees the rest.
struct BenchOptions {
  std::string backend;  // --backend (the run config spells it --train.backend)
  std::string suite;    // --suite FILE|NAME with --depth L: the suite's shape and recipe
  int depth = 0;
  int warmup_steps = 1;  // --warmup: untimed steps first (allocations, plans, page faults)
  double peak_tflops = kPeakBf16Tflops;
  bool json = false;        // --json: one JSON object instead of the text lines
  bool breakdown = false;   // --breakdown: one more step, every op timed
  bool shape_only = false;  // --shape-only: the JSON of the resolved shape, nothing timed
  bool record = true;       // a CPU measurement goes to the throughput cache (--no-record: not)
};

int to_int(const std::string& option, const std::string& text, int min) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  DB_REQUIRE(used == text.size() && value >= min,
             option + " needs an integer ≥ " + std::to_string(min) + ", not '" + text + "'");
  return value;
}

BenchOptions take_bench_options(int& argc, char** argv) {
  BenchOptions o;
  int out = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i > 0 && (arg == "--json" || arg == "--breakdown" || arg == "--shape-only")) {
      (arg == "--json" ? o.json : arg == "--breakdown" ? o.breakdown : o.shape_only) = true;
      continue;
    }
    if (i > 0 && arg == "--no-record") {
      o.record = false;
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    if (i == 0 || (name != "--backend" && name != "--suite" && name != "--depth" &&
                   name != "--warmup" && name != "--peak-tflops")) {
      argv[out++] = argv[i];
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      DB_REQUIRE(i + 1 < argc, name + " needs a value");
      value = argv[++i];
    }
    if (name == "--backend") o.backend = value;
    if (name == "--suite") o.suite = value;
    if (name == "--depth") o.depth = to_int(name, value, 1);
    if (name == "--warmup") o.warmup_steps = to_int(name, value, 0);
    if (name == "--peak-tflops") {
      o.peak_tflops = std::atof(value.c_str());
      DB_REQUIRE(o.peak_tflops > 0, "--peak-tflops needs a positive number, not '" + value + "'");
    }
  }
  argc = out;
  DB_REQUIRE(o.suite.empty() == (o.depth == 0), "--suite and --depth go together");
  return o;
}

// The recipe of the suite and its shape of depth L (as `plan` builds its runs), design Pre-LN.
RunConfig suite_config(const std::string& suite_name, int depth) {
  const sweep::Suite suite = sweep::parse_suite_file(locate_suite(suite_name));
  std::string depths;
  for (const sweep::Shape& shape : sweep::suite_shapes(suite)) {
    depths += (depths.empty() ? "" : ", ") + std::to_string(shape.n_layer());
    if (shape.n_layer() != depth) continue;
    RunConfig config = suite.base;
    const ModelConfig& m = shape.model;
    config.model.n_layer = m.n_layer;
    config.model.d_model = m.d_model;
    config.model.n_head = m.n_head;
    config.model.n_kv_head = m.n_kv_head;
    config.model.ff = m.ff;
    config.model.qk_norm = m.qk_norm;
    return config;
  }
  throw Error("--depth " + std::to_string(depth) + ": suite " + suite.name +
              " has no shape of that depth (depths: " + depths + ")");
}

// Adds this CPU measurement to the cache `plan` reads. Every rank of the job benched at once
// and shared the cores, so the figure is the slowest rank's; rank 0 writes it.
void record_cpu_measurement(const BenchResult& result) {
  const Communicator world = Communicator::world();
  const double slowest_step_ms = world.allreduce_max(result.step_ms);
  if (world.rank() != 0) return;
  sweep::ThroughputMeasurement m;
  m.machine = sweep::this_machine();
  m.measured_at = iso_time_now();
  m.arch = result.config.model.arch;
  m.n_layer = result.config.model.n_layer;
  m.d_model = result.config.model.d_model;
  m.seq_len = result.config.recipe.seq_len;
  m.micro_batch = result.config.recipe.micro_batch_sequences;
  m.threads_per_rank = result.threads;
  m.ranks = world.size();
  m.flops_per_token = result.flops_per_token;
  m.tokens_per_second = double(m.micro_batch * m.seq_len) / (slowest_step_ms * 1e-3);
  const std::string path = sweep::throughput_cache_path();
  try {
    sweep::record_throughput(path, m);
    std::fprintf(stderr,
                 "bench: %.1f GFLOP/s per rank recorded in %s (`depthbench plan` reads it)\n",
                 m.gflops_per_rank(), path.c_str());
  } catch (const std::exception& e) {  // a read-only home must not fail the measurement
    std::fprintf(stderr, "bench: not recorded: %s\n", e.what());
  }
}

const char* usage() {
  return "usage: depthbench bench [--suite SUITE --depth L] [--model.* shape] "
         "[--train.seq_len T] [--train.micro_batch B] [--train.steps timed steps] "
         "[--train.threads N] [--backend BACKEND] [--warmup N] [--peak-tflops P] [--json] "
         "[--breakdown] [--shape-only] [--no-record]\n"
         "  --suite S --depth L  the shape of depth L of suite S (file or shipped name) with its "
         "recipe's vocabulary, T and micro-batch;\n"
         "                       --model.* / --train.* keys given as well override it\n"
         "  --warmup N           untimed steps before the timed ones (default 1)\n"
         "  --peak-tflops P      the MFU denominator per device (default 989: dense bf16 of one "
         "H100/H200 SXM)\n"
         "  --json               print one JSON object (bench/gpu_speed.sh reads it)\n"
         "  --breakdown          time every op of one more step (CUDA events on a GPU, the host "
         "clock on the CPU)\n"
         "  --shape-only         print the JSON of the resolved shape (no backend, nothing timed)\n"
         "  --no-record          do not add a CPU measurement to the throughput cache that "
         "`depthbench plan`\n"
         "                       reads (by default it is added; doc/sweeps.md, \"Estimates\")";
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  const BenchOptions options = take_bench_options(argc, argv);
  RunConfig config;
  if (!options.suite.empty()) {
    config = suite_config(options.suite, options.depth);
  } else {
    config.recipe.seq_len = 256;
    config.recipe.micro_batch_sequences = 4;
    config.model.d_model = 256;
    config.model.n_layer = 4;
  }
  config.recipe.steps = 5;
  if (!parse_run_config(argc, argv, config, usage())) return 0;
  DB_REQUIRE(config.recipe.steps >= 1, "--train.steps (the timed steps) must be at least 1");
  BenchResult result;
  const ParameterCounts counts = count_parameters(config.model);
  result.config = config;
  result.params = counts.total;
  result.params_non_embedding = counts.total - counts.embedding;
  result.flops_per_token = flops_per_token(config.model, config.recipe.seq_len);
  result.peak_tflops = options.peak_tflops;
  if (options.shape_only) {  // e.g. the shape for the PyTorch reference when our run fails
    print_bench_json(result);
    return 0;
  }
  // The backend's device was chosen at start-up (main.cpp, start_backends).
  Backend& backend = choose_backend(options.backend.empty() ? config.backend : options.backend);
  result.threads = config.threads > 0 ? config.threads : backend.host_threads();
  backend.set_host_threads(result.threads);
  backend.reset_memory_peak();
  const int T = config.recipe.seq_len;
  const int64_t B = config.recipe.micro_batch_sequences;
  // The ops of a model built while a timer is attached time themselves whenever it records.
  std::unique_ptr<SectionTimer> timer;
  if (options.breakdown) {
    timer = backend.make_section_timer();
    timer->set_recording(false);
    backend.attach_section_timer(timer.get());
  }
  Model<float> model(config.model, backend, config.ops_options());
  model.set_recompute(parse_recompute(config.recompute));
  backend.attach_section_timer(nullptr);
  model.initialize(config.seed);
  AdamW<float> optimizer(model.layout(), config.recipe, model.space());
  // Tokens staged where the device copies from fastest, as the trainer stages them.
  Buffer<int32_t> tokens;
  {
    MemorySpaceScope staging(backend.staging_space());
    tokens.resize(B * T);
  }
  Rng rng(config.seed, "bench");
  for (int32_t& t : std::span(tokens.data(), tokens.size()))
    t = int32_t(rng.below(config.model.vocab_size));
  // One training step as the trainer runs it: gradients, their norm (clipping), AdamW.
  auto section = [&](const char* name, auto&& work) {
    if (timer && timer->recording()) timer->begin(name);
    work();
    if (timer && timer->recording()) timer->end();
  };
  auto step = [&] {
    section("zero_grads", [&] { model.params().zero_grads(); });
    result.loss = model.forward_backward(tokens.data(), B, T, 1.0 / (B * (T - 1))) / (B * (T - 1));
    double norm = 0;
    section("grad_norm", [&] { norm = global_norm(model.params()); });
    const double clip = norm > 1.0 ? 1.0 / norm : 1.0;
    section("adamw_step", [&] { optimizer.step(model.params(), 1e-3, clip); });
  };
  using Clock = std::chrono::steady_clock;
  auto timed_steps = [&](int64_t steps) {
    const auto t0 = Clock::now();
    for (int64_t s = 0; s < steps; ++s) step();
    backend.synchronize();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  timed_steps(options.warmup_steps);
  const double measured_ms = timed_steps(config.recipe.steps);
  if (timer) {
    timer->clear();
    timer->set_recording(true);
    const LaunchTimerScope design_kernels(*timer);  // the designs' launches, by functor
    result.breakdown_step_ms = timed_steps(1);
    result.breakdown = timer->totals();
    timer->set_recording(false);
  }
  result.backend = backend.name();
  result.attention_paths = model.ops().attention_paths();
  result.activation_dtype = model.backbone().bf16_storage() ? "bf16" : "fp32";
  // "off (ops timed)" with --breakdown: a timed model runs every micro-batch eagerly.
  result.cuda_graphs = model.ops().capture_status();
  result.device = backend.space().is_host() ? "" : backend.device_name();
  result.warmup_steps = options.warmup_steps;
  result.measured_steps = config.recipe.steps;
  result.step_ms = measured_ms / double(config.recipe.steps);
  result.tokens_per_second = double(B * T) / (result.step_ms * 1e-3);
  result.peak_memory_bytes = backend.memory_peak_bytes();
  const bool on_host = backend.space().is_host();
  if (on_host && options.record && !options.breakdown) record_cpu_measurement(result);
  if (options.json) {
    print_bench_json(result);
  } else {
    print_bench_text(result);
    if (timer)
      print_bench_breakdown(result, backend.space().is_host() ? "host clock" : "CUDA events");
  }
  return 0;
}

}  // namespace db::app
