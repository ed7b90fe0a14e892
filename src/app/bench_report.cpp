#include "app/bench_report.hpp"

#include <algorithm>
#include <cstdio>

#include "util/json.hpp"

namespace db::app {

void print_bench_text(const BenchResult& r) {
  const RunConfig& c = r.config;
  std::printf("bench arch=%s L=%d d=%d T=%d B=%lld threads=%d params=%lld backend=%s%s\n",
              c.model.arch.c_str(), c.model.n_layer, c.model.d_model, c.recipe.seq_len,
              (long long)c.recipe.micro_batch_sequences, r.threads, (long long)r.params,
              r.backend.c_str(), r.device.empty() ? "" : (" device=\"" + r.device + "\"").c_str());
  std::printf("tokens_per_second=%.1f gflops=%.2f step_ms=%.2f peak_memory_gib=%.3f loss=%.4f",
              r.tokens_per_second, r.flops_per_token * r.tokens_per_second * 1e-9, r.step_ms,
              r.peak_memory_bytes / double(1 << 30), r.loss);
  if (!r.device.empty()) std::printf(" mfu=%.2f%%", 100 * r.mfu());
  std::printf(
      "\nactivation_dtype: %s\nattention_paths: %s\ncuda_graphs: %s\nrecompute: %s\n"
      "fused_kernels: %s\nstate_dtype: %s\n",
      r.activation_dtype.c_str(), r.attention_paths.c_str(), r.cuda_graphs.c_str(),
      c.recompute.c_str(), c.fused_kernels.c_str(), c.state_dtype.c_str());
  if (!r.device.empty())
    std::printf(
        "mfu is achieved FLOP/s ((6·N_non-embedding + 12·L·d·T + design extras) per token) over "
        "a peak of %.0f TFLOP/s (dense bf16 of one H100/H200 SXM unless --peak-tflops)\n",
        r.peak_tflops);
}

void print_bench_json(const BenchResult& r) {
  const RunConfig& c = r.config;
  const ModelConfig& m = c.model;
  std::string out = "{";
  auto field = [&](const char* key, const std::string& json_value) {
    if (out.size() > 1) out += ", ";
    out += json_quote(key) + ": " + json_value;
  };
  auto integer = [](int64_t x) { return std::to_string(x); };
  field("arch", json_quote(m.arch));
  field("backend", json_quote(r.backend));
  field("device", json_quote(r.device));
  field("precision", json_quote(c.precision));
  field("activation_dtype", json_quote(r.activation_dtype));
  field("attention_paths", json_quote(r.attention_paths));
  field("cuda_graphs", json_quote(r.cuda_graphs));
  field("recompute", json_quote(c.recompute));
  field("fused_kernels", json_quote(c.fused_kernels));
  field("state_dtype", json_quote(c.state_dtype));
  field("threads", integer(r.threads));
  field("n_layer", integer(m.n_layer));
  field("d_model", integer(m.d_model));
  field("n_head", integer(m.n_head));
  field("n_kv_head", integer(m.kv_heads()));
  field("ff", integer(m.ff_dim()));
  field("vocab_size", integer(m.vocab_size));
  field("qk_norm", m.qk_norm ? "true" : "false");
  field("seq_len", integer(c.recipe.seq_len));
  field("micro_batch", integer(c.recipe.micro_batch_sequences));
  field("params", integer(r.params));
  field("params_non_embedding", integer(r.params_non_embedding));
  field("flops_per_token", json_number(r.flops_per_token));
  field("warmup_steps", integer(r.warmup_steps));
  field("steps", integer(r.measured_steps));
  field("step_ms", json_number(r.step_ms));
  field("tokens_per_second", json_number(r.tokens_per_second));
  field("peak_tflops", json_number(r.peak_tflops));
  field("mfu", json_number(r.mfu()));
  field("peak_memory_bytes", integer(int64_t(r.peak_memory_bytes)));
  field("loss", json_number(r.loss));
  if (!r.breakdown.empty()) {
    std::string sections = "[";
    for (const SectionTimer::Total& t : r.breakdown)
      sections +=
          std::string(sections.size() > 1 ? ", " : "") + "{\"section\": " + json_quote(t.section) +
          ", \"ms\": " + json_number(t.milliseconds) + ", \"calls\": " + integer(t.calls) + "}";
    field("breakdown_step_ms", json_number(r.breakdown_step_ms));
    field("breakdown", sections + "]");
  }
  std::printf("%s}\n", out.c_str());
}

void print_bench_breakdown(const BenchResult& r, const char* timer_kind) {
  std::vector<SectionTimer::Total> sections = r.breakdown;
  std::stable_sort(sections.begin(), sections.end(),
                   [](const auto& a, const auto& b) { return a.milliseconds > b.milliseconds; });
  double timed = 0;
  for (const auto& s : sections) timed += s.milliseconds;
  const double step = r.breakdown_step_ms;
  auto percent = [&](double ms) { return step > 0 ? 100 * ms / step : 0.0; };
  std::printf("breakdown of one step of %s (%s): %.2f ms\n", r.config.model.arch.c_str(),
              timer_kind, step);
  std::printf("  %-42s %7s %11s %8s\n", "section", "calls", "ms", "% step");
  for (const auto& s : sections)
    std::printf("  %-42s %7lld %11.3f %7.1f%%\n", s.section.c_str(), (long long)s.calls,
                s.milliseconds, percent(s.milliseconds));
  std::printf("  %-42s %7s %11.3f %7.1f%%\n", "other (host work, gaps)", "", step - timed,
              percent(step - timed));
}

}  // namespace db::app
