// depthbench plan: every run of a suite (shape, parameters, tokens, steps, FLOPs and estimated
// GPU-hours) without training; runs whose design is not registered in this build are flagged.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "app/commands.hpp"
#include "app/plan_throughput.hpp"
#include "app/sweep_options.hpp"
#include "data/validation_windows.hpp"
#include "diag/diagnostics_estimate.hpp"
#include "sweep/input_check.hpp"
#include "sweep/run_notes.hpp"
#include "sweep/run_status.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/memory_estimate.hpp"

namespace db::app {
namespace {

std::string human(double value, const char* unit = "") {
  char text[32];
  if (value >= 1e9)
    std::snprintf(text, sizeof text, "%.3fB%s", value / 1e9, unit);
  else if (value >= 1e6)
    std::snprintf(text, sizeof text, "%.2fM%s", value / 1e6, unit);
  else
    std::snprintf(text, sizeof text, "%.1fK%s", value / 1e3, unit);
  return text;
}

// Hours as "2.5 h", minutes below an hour, seconds below a minute.
std::string format_hours(double hours) {
  char text[32];
  if (hours >= 1)
    std::snprintf(text, sizeof text, "%.1f h", hours);
  else if (hours * 60 >= 1)
    std::snprintf(text, sizeof text, "%.1f min", hours * 60);
  else
    std::snprintf(text, sizeof text, "%.1f s", hours * 3600);
  return text;
}

// Memory in GiB, or in MiB below one GiB (a small model's estimate would print as 0.0 GiB).
std::string memory_text(double bytes) {
  char text[32];
  if (bytes >= double(1 << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / double(1 << 30));
  else
    std::snprintf(text, sizeof text, "%.0f MiB", bytes / double(1 << 20));
  return text;
}

// The deviation of a run's shape (as its Pre-LN count) from the suite's budget: "+2.2%", or "-"
// for an explicit shape or a suite without a budget.
std::string deviation_text(const sweep::Suite& suite, const ModelConfig& m) {
  if (!suite.budget_kind) return "-";
  for (const sweep::Shape& shape : sweep::suite_shapes(suite)) {
    if (shape.n_layer() != m.n_layer || shape.d_model() != m.d_model) continue;
    const bool solved =
        std::find(suite.depths.begin(), suite.depths.end(), m.n_layer) != suite.depths.end();
    if (!solved) return "-";
    char text[16];
    std::snprintf(text, sizeof text, "%+.1f%%", 100 * sweep::budget_deviation(suite, shape));
    return text;
  }
  return "-";
}

// What the inputs check found: each problem, or the validation coverage with a warning when it
// is thin. Returns false when a problem was found.
bool print_input_check(const sweep::Suite& suite) {
  const sweep::InputCheck check = sweep::check_suite_inputs(suite.base);
  for (const std::string& problem : check.problems)
    std::printf("input problem: %s\n", problem.c_str());
  if (!check.ok()) {
    std::printf(
        "%zu input problem(s): `depthbench sweep` refuses to start until they are fixed "
        "(doc/sweeps.md, \"Inputs checked before the sweep\")\n\n",
        check.problems.size());
    return false;
  }
  if (const auto& v = check.validation) {
    std::printf(
        "inputs: ok (%s training tokens; ids sampled); validation: %lld windows = %lld tokens "
        "(%.2f%% of %lld held out), ",
        human(double(check.train_tokens)).c_str(), (long long)v->windows, (long long)v->tokens,
        100 * v->token_fraction(), (long long)v->held_out_tokens);
    if (v->documents >= 0)
      std::printf("%lld of %lld documents, spread evenly over the validation files\n",
                  (long long)v->documents, (long long)v->held_out_documents);
    else
      std::printf("documents unknown (no manifest gives the end-of-document id)\n");
    if (const std::string warning = data::thin_validation_warning(*v); !warning.empty())
      std::printf("warning: %s\n", warning.c_str());
  }
  return true;
}

// The suite's diagnostics over all runs: their FLOPs, hours at each run's own throughput, and
// their share of training's, which grows with depth (causal, permutation and pruning passes).
struct DiagnosticsTotal {
  double flops = 0, hours = 0, largest_ratio = 0;
  int64_t most_passes = 0;
  int deepest = 0;
  diag::DiagnosticsEstimate last;  // its window length and skipped names are the suite's

  void add(const diag::DiagnosticsEstimate& e, double training_flops, double flops_per_second,
           int n_layer) {
    flops += e.flops;
    hours += e.flops / flops_per_second / 3600;
    if (e.flops / training_flops > largest_ratio) {
      largest_ratio = e.flops / training_flops;
      deepest = n_layer;
    }
    most_passes = std::max(most_passes, e.forward_passes);
    last = e;
  }

  void print(const std::vector<std::string>& names) const {
    std::string list;
    for (const std::string& n : names) {
      if (!list.empty()) list += ' ';
      list += n;
    }
    char share[32];  // "1.5x" of training, or "0.17% of" for a large model
    if (largest_ratio >= 0.1)
      std::snprintf(share, sizeof share, "%.1fx", largest_ratio);
    else
      std::snprintf(share, sizeof share, "%.2g%% of", 100 * largest_ratio);
    std::printf(
        "diagnostics (%s) on every run the sweep completes: %.3e FLOPs in all, %s at each run's "
        "throughput above, a lower bound: they pass one window at a time (GPU-hours of GPU runs; "
        "forward passes of %d-token windows, up to %lld per run; "
        "doc/diagnostics.md); up to %s a run's training FLOPs (the L=%d runs)\n",
        list.c_str(), flops, format_hours(hours).c_str(), last.window_len, (long long)most_passes,
        share, deepest);
    for (const auto& [name, reason] : last.skipped)
      std::printf("diagnostics: %s is skipped in a sweep: %s\n", name.c_str(), reason.c_str());
    if (largest_ratio > 1)
      std::printf(
          "warning: the diagnostics cost more than training itself; `diagnostics = ` fewer names, "
          "or run `depthbench diagnose --causal-windows N ...` with smaller samples afterwards\n");
  }
};

}  // namespace

int run_plan_command(int argc, char** argv) {
  SweepOptions options;
  if (!parse_sweep_options(argc, argv, /*is_sweep=*/false, options)) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;
  const sweep::Suite suite = sweep::parse_suite_file(options.suite_file);
  const std::string out = options.out_dir.empty() ? "runs/" + suite.name : options.out_dir;
  const std::vector<sweep::PlannedRun> runs = sweep::plan_suite(suite, out);
  const double mfu = options.mfu > 0 ? options.mfu : suite.estimate.mfu;
  const double peak =
      (options.peak_tflops > 0 ? options.peak_tflops : suite.estimate.peak_tflops_per_gpu) * 1e12;

  std::printf(
      "suite %s (%s): %zu runs = %zu shapes x %zu designs x learning rates, shape rule %s, ",
      suite.name.c_str(), suite.source.c_str(), runs.size(), sweep::suite_shapes(suite).size(),
      suite.designs.size(), suite.rule.name.c_str());
  if (suite.budget_kind)
    std::printf("budget %s %s\n",
                *suite.budget_kind == sweep::BudgetKind::total ? "total" : "backbone",
                human(suite.budget).c_str());
  else
    std::printf("explicit shapes\n");
  std::printf(
      "estimate: `hours` of a GPU run = FLOPs / (MFU %.0f%% x %.0f TFLOP/s per GPU) / 3600 "
      "(GPU-hours; %d GPU(s) per run); of a CPU run = FLOPs / (GFLOP/s per rank, the `CPU "
      "throughput` below, x --ranks-per-run %d) / 3600 (wall hours); FLOPs = tokens x (6N + "
      "12·L·d·T + design extras), N without the embedding\n",
      mfu * 100, peak / 1e12, suite.estimate.gpus_per_run, options.ranks_per_run);
  const bool inputs_ok = print_input_check(suite);
  std::printf(
      "output: %s   (state: pending | unfinished | completed | diverged | failed | stale)\n\n",
      out.c_str());
  std::printf(
      "mem: estimated per rank at the recipe's train.micro_batch (weights, AdamW, "
      "activations with the design's own state as train.recompute keeps them, cuDNN's attention "
      "workspace in bf16 CUDA runs, the MPI gradient sum's scratch of CPU runs on --ranks-per-run "
      "> 1; one H200 holds 141 GB)\n");
  std::printf(
      "disk: per run, the files it keeps: NAME.weights + NAME.init.weights (fp32, 4 bytes per "
      "parameter each; with a 128K vocabulary even a tiny model's embedding and head make them "
      "130 MB or more) + the run file\n");
  std::printf(
      "budget: `vs budget` is each shape's deviation from suite.budget (Pre-LN count); beyond "
      "suite.budget_tolerance = %g%% plan and sweep refuse the suite\n",
      100 * suite.budget_tolerance);
  if (!suite.seeds.empty())
    std::printf("seeds: %zu per cell (suite.seeds), the seed part of each run name (__sSEED)\n",
                suite.seeds.size());
  std::printf("%4s  %-14s %3s %5s %5s %4s %7s %9s %9s %7s %8s %7s %8s %5s %9s %8s %8s %8s  %s\n",
              "#", "design", "L", "d", "ff", "hd", "d/L", "params", "backbone", "vs bud.", "tokens",
              "steps", "lr", "seed", "FLOPs", "hours", "mem", "disk", "state");
  PlanThroughput cpu_throughput(suite);
  double total_flops = 0, total_disk = 0, peak_disk = 0, cpu_hours = 0, gpu_flops = 0;
  DiagnosticsTotal diagnostics;
  int unregistered = 0, renamed = 0, embedding_heavy = 0;
  double largest_embedding_share = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const sweep::PlannedRun& run = runs[i];
    const ModelConfig& m = run.config.model;
    // A CPU run's hours are wall hours on its ranks at the stated throughput; a GPU run's are
    // GPU-hours at the stated MFU.
    const bool on_cpu = run.config.backend == "cpu";
    const double flops_per_second =
        on_cpu ? cpu_throughput.gflops_per_rank(m, run.flops / double(run.tokens)) * 1e9 *
                     options.ranks_per_run
               : mfu * peak;
    const double gpu_hours = run.flops / flops_per_second / 3600;
    (on_cpu ? cpu_hours : gpu_flops) += on_cpu ? gpu_hours : run.flops;
    const double embedding_share = 2.0 * double(run.counts.embedding) / double(run.counts.total);
    if (embedding_share > 0.5) {
      ++embedding_heavy;
      largest_embedding_share = std::max(largest_embedding_share, embedding_share);
    }
    RunConfig sized = run.config;  // an unregistered design is sized as its Pre-LN shape
    if (!run.design_registered) sized.model.arch = "pre_ln";
    if (!suite.diagnostics.empty())
      diagnostics.add(
          diag::estimate_diagnostics(suite.diagnostics, sized.model, run.config.recipe.seq_len),
          run.flops, flops_per_second, m.n_layer);
    total_flops += run.flops;
    unregistered += run.design_registered ? 0 : 1;
    const sweep::DiskEstimate disk = sweep::estimate_disk(run.config, run.counts);
    total_disk += disk.kept();
    peak_disk = std::max(peak_disk, disk.peak());
    std::printf(
        "%4zu  %-14s %3d %5d %5d %4d %7.2f %9s %9s %7s %8s %7lld %8.1e %5llu %9.2e %8.3g %8s "
        "%8s  %s%s\n",
        i + 1, m.arch.c_str(), m.n_layer, m.d_model, m.ff_dim(), m.head_dim(), m.aspect_ratio(),
        human(double(run.counts.total)).c_str(), human(double(run.counts.backbone)).c_str(),
        deviation_text(suite, m).c_str(), human(double(run.tokens)).c_str(),
        (long long)run.config.recipe.steps, run.config.recipe.learning_rate,
        (unsigned long long)run.config.seed, run.flops, gpu_hours,
        memory_text(estimate_memory(sized, options.ranks_per_run).total()).c_str(),
        sweep::format_bytes(disk.kept()).c_str(), sweep::run_status(run.config).c_str(),
        run.design_registered ? "" : "  unregistered design");
    if (const std::string note = sweep::design_note(m); !note.empty()) {
      std::printf("      note: %s\n", note.c_str());
      ++renamed;
    }
    for (const std::string& key : sweep::stale_keys(run.config))
      std::printf("      stale: %s\n", key.c_str());
  }
  const double total_gpu_hours = gpu_flops / (mfu * peak) / 3600;
  std::printf("\ntotal: %zu runs, %.3e FLOPs", runs.size(), total_flops);
  if (gpu_flops > 0)
    std::printf(
        ", %.0f GPU-hours at %.0f%% MFU (%.1f h wall on %d GPU(s) per run, one run at a "
        "time)",
        total_gpu_hours, mfu * 100, total_gpu_hours / suite.estimate.gpus_per_run,
        suite.estimate.gpus_per_run);
  if (cpu_hours > 0)
    std::printf(
        ", CPU runs %s one after another (on %d rank(s) each; a sweep on N ranks takes about "
        "that / (N / --ranks-per-run))",
        format_hours(cpu_hours).c_str(), options.ranks_per_run);
  std::printf("\n");
  if (cpu_hours > 0) cpu_throughput.print_sources();
  if (!suite.diagnostics.empty()) diagnostics.print(suite.diagnostics);
  if (embedding_heavy > 0)
    std::printf(
        "warning: %d run(s) have most of their parameters in the embedding and LM head (up to "
        "%.0f%%, V = %d): the budget then mostly buys vocabulary rows, and shapes differ little "
        "in the blocks that the depth question is about (a smaller vocabulary or a larger "
        "budget; or budget = backbone)\n",
        embedding_heavy, 100 * largest_embedding_share, suite.base.model.vocab_size);
  std::printf(
      "disk: %s for the suite's kept files; a run in training also holds its checkpoint "
      "(weights + AdamW moments, 12 bytes per parameter, twice during a checkpoint write): up to "
      "%s for the largest run while it trains\n",
      sweep::format_bytes(total_disk).c_str(), sweep::format_bytes(peak_disk).c_str());
  if (renamed > 0)
    std::printf(
        "%d Block AttnRes run(s) have blocks of one sublayer and are Full AttnRes (`note:` "
        "above; doc/architectures.md §10)\n",
        renamed);
  if (unregistered > 0)
    std::printf(
        "%d run(s) name a design this build does not register (`unregistered design`): a sweep "
        "records them failed\n",
        unregistered);
  if (!inputs_ok)
    std::printf(
        "input problems (listed above the table): `depthbench sweep` refuses to start until "
        "they are fixed\n");
  return 0;
}

}  // namespace db::app
