// What `depthbench bench` measured, and its two printed forms: the human lines and one JSON
// object (`--json`, read by bench/gpu_speed.sh), plus the per-op breakdown of one step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/section_timer.hpp"
#include "train/run_config.hpp"

namespace db::app {

struct BenchResult {
  RunConfig config;
  std::string backend, device;   // device: "" on the host
  std::string attention_paths;   // the attention kernel each shape ran (Ops::attention_paths)
  std::string activation_dtype;  // what the sublayer cores stored: fp32 | bf16
  std::string cuda_graphs;       // what the micro-batches ran as (Ops::capture_status)
  int threads = 0;
  int64_t params = 0, params_non_embedding = 0;
  double flops_per_token = 0;  // 6·N_non-embedding + 12·L·d·T + the design's extras
  int warmup_steps = 0;
  int64_t measured_steps = 0;
  double step_ms = 0, tokens_per_second = 0, loss = 0;
  double peak_tflops = 0;        // the MFU denominator (per device)
  size_t peak_memory_bytes = 0;  // the backend's high-water mark (host: peak RSS)
  double breakdown_step_ms = 0;  // the extra step timed op by op (--breakdown), else 0
  std::vector<SectionTimer::Total> breakdown;

  double mfu() const { return flops_per_token * tokens_per_second / (peak_tflops * 1e12); }
};

void print_bench_text(const BenchResult& r);
// One line: {"arch": ..., "tokens_per_second": ..., ...}.
void print_bench_json(const BenchResult& r);
// The sections sorted by time, each with calls, ms and % of the step; the rest of the step
// ("other": host work and the gaps between launches) last; the designs' own kernels have
// sections of their own (ops/launch_timer.hpp).
void print_bench_breakdown(const BenchResult& r, const char* timer_kind);

}  // namespace db::app
