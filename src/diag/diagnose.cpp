#include "diag/diagnose.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/version.hpp"
#include "diag/diagnostics.hpp"
#include "io/checkpoint.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_library.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/run_file.hpp"
#include "io/stored_paths.hpp"
#include "model/model_on_backend.hpp"
#include "ops/backend.hpp"
#include "util/glob.hpp"

namespace db::diag {
namespace {

struct LoadedRun {
  RunConfig config;
  std::string run_id;
  std::vector<std::string> val_files;
  std::vector<float> params;
  std::string tokenizer;  // the checkpoint's own tokenizer.json, if any
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

LoadedRun load_run(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  DB_REQUIRE(id >= 0, "cannot open run file " + path);
  H5Handle file(id, close_hdf5_file);
  auto attribute = [&](const char* name) {
    DB_REQUIRE(H5Aexists(file.get(), name) > 0, path + " has no root attribute '" + name + "'");
    return read_string_attribute(file.get(), name);
  };
  LoadedRun run;
  const std::string status = attribute("status");
  DB_REQUIRE(status == "completed",
             path + ": the run is '" + status + "'; only completed runs can be diagnosed");
  run.config = parse_run_config_text(attribute("config"));
  run.run_id = attribute("run_id");
  run.val_files = split(attribute("val_files"), ';');

  // The final weights, read by the names of the run's model (doc/hdf5-schema.md "Weight and
  // checkpoint files").
  const std::string weights_file = weights_path(path);
  const std::optional<std::string> weights_run = read_checkpoint_run_id(weights_file);
  DB_REQUIRE(weights_run.has_value(), "final weights " + weights_file + " not found");
  DB_REQUIRE(*weights_run == run.run_id,
             weights_file + " belongs to run " + *weights_run + ", not " + run.run_id);
  run.params = read_checkpoint(weights_file, run.config.model)->params;
  return run;
}

// A Hugging Face folder as a Pre-LN run whose context is max_position_embeddings.
LoadedRun load_hf(const DiagnoseOptions& options) {
  Checkpoint checkpoint = read_hf_checkpoint(options.hf_dir);
  LoadedRun run;
  run.config.model = checkpoint.model;
  run.config.recipe.seq_len = int(std::min<int64_t>(checkpoint.seq_len, 1 << 30));
  run.run_id = checkpoint.run_id;
  run.params = std::move(checkpoint.params);
  const std::string tokenizer = options.hf_dir + "/tokenizer.json";
  if (std::filesystem::exists(tokenizer)) run.tokenizer = tokenizer;
  return run;
}

// The results of a Hugging Face checkpoint go to a run-file-shaped HDF5 file, created by rank 0
// once the inputs have been checked.
void create_result_file(const DiagnoseOptions& options, const std::string& run_id,
                        const Communicator& comm) {
  if (comm.rank() == 0 && !std::filesystem::exists(options.run_file)) {
    RunFile file = RunFile::create(options.run_file);
    file.set_attribute("run_id", run_id);
    file.set_attribute("hf_checkpoint", options.hf_dir);
    file.publish();
  }
  comm.barrier();
}

// "0.042 s", "12.3 s", then "2m05s".
std::string format_seconds(double seconds) {
  if (seconds >= 60) return format_duration(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", seconds);
  return text;
}

// Seconds of one forward pass of one window, slowest rank: the second of two passes, the first
// pays for warm-up (page faults, BLAS buffers, a GPU's first launches).
double seconds_per_forward(const DiagContext& ctx) {
  std::vector<int32_t> tokens;
  ctx.window_loss(0, tokens);
  const auto start = std::chrono::steady_clock::now();
  ctx.window_loss(0, tokens);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ctx.comm.allreduce_max(seconds);
}

// A simple cost model printed before the diagnostics start: each diagnostic's forward passes,
// shared by the ranks, times the measured seconds of one pass, plus its extra work (logitlens:
// one readout through the LM head per depth state, measured the same way). An estimate: the
// passes of some diagnostics do a little more or less than a plain forward.
void print_time_estimate(DiagContext& ctx, const std::vector<const Diagnostic*>& diagnostics) {
  const double forward = seconds_per_forward(ctx);
  const int ranks = ctx.comm.size();
  const auto shared = [ranks](int64_t units) { return double((units + ranks - 1) / ranks); };
  std::vector<std::string> lines;
  double total = 0;
  for (const Diagnostic* d : diagnostics) {
    const int64_t passes = d->cost(ctx.scope()).forward_passes;
    double seconds = shared(passes) * forward;
    std::string extra;
    if (d->extra_work) {
      const ExtraWork work = d->extra_work(ctx);
      const double each = ctx.comm.allreduce_max(work.seconds_each);
      seconds += shared(work.units) * each;
      extra = " + " + std::to_string(work.units) + " " + work.what + " x " + format_seconds(each);
    }
    total += seconds;
    char name[32];
    std::snprintf(name, sizeof name, "%-17s ", d->name.c_str());
    lines.push_back(name + std::to_string(passes) + " passes" + extra + ": ~" +
                    format_seconds(seconds));
  }
  if (ctx.comm.rank() != 0) return;
  std::printf(
      "estimate before starting (one forward pass of a %d-token window took %s; passes "
      "shared by %d rank%s):\n",
      ctx.windows.window_len(), format_seconds(forward).c_str(), ranks, ranks == 1 ? "" : "s");
  for (const std::string& line : lines) std::printf("  %s\n", line.c_str());
  std::printf("  total             ~%s (an estimate from one measured pass, not a promise)\n",
              format_seconds(total).c_str());
  std::fflush(stdout);
}

}  // namespace

const std::vector<Diagnostic>& all_diagnostics() {
  static const std::vector<Diagnostic> diagnostics = {
      angular_distance_diagnostic(), causal_score_diagnostic(), permutation_score_diagnostic(),
      path_weights_diagnostic(),     pruning_diagnostic(),      logitlens_diagnostic(),
      domain_nll_diagnostic(),
  };
  return diagnostics;
}

std::vector<std::string> diagnostic_names() {
  std::vector<std::string> names;
  for (const Diagnostic& d : all_diagnostics()) names.push_back(d.name);
  return names;
}

std::string weights_path(const std::string& run_file) {
  std::string stem = run_file;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".h5") == 0) stem.resize(stem.size() - 3);
  return stem + ".weights";
}

DiagnoseReport run_diagnostics(const DiagnoseOptions& options, const Communicator& comm) {
  const bool rank0 = comm.rank() == 0;
  check_settings(options.settings);
  for (const std::string& name : options.only) {
    const auto names = diagnostic_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string valid;
      for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
      throw Error("unknown diagnostic '" + name + "' (valid: " + valid + ")");
    }
  }
  host_backend().set_host_threads(options.threads > 0 ? options.threads
                                                      : comm.threads_per_rank_on_node());
  const bool hf = !options.hf_dir.empty();
  const LoadedRun run = hf ? load_hf(options) : load_run(options.run_file);
  // The forward passes run on the run's backend unless told otherwise (an HF folder: auto).
  const std::string backend = !options.backend.empty() ? options.backend
                              : hf                     ? "auto"
                                                       : run.config.backend;
  const std::unique_ptr<Model<float>> loaded =
      model_on_backend(run.config.model, run.params, backend);
  Model<float>& model = *loaded;

  DiagSettings settings = options.settings;
  // T_d never exceeds the context the model was trained on (RoPE positions beyond it were
  // never seen); tiny demo runs train with short sequences.
  settings.window_len = std::min(settings.window_len, run.config.recipe.seq_len);
  DB_REQUIRE(settings.window_len >= 2, "window length must be at least 2 tokens");
  // The run's own files were stored by the run file (absolute since they are), --tokens are
  // the user's patterns, read against the current directory.
  const std::vector<std::string> files = options.token_globs.empty()
                                             ? expand_stored_globs(run.val_files, options.run_file)
                                             : expand_globs(options.token_globs);
  DB_REQUIRE(!files.empty(), run.val_files.empty()
                                 ? "no token files: the run has no validation files, give --tokens"
                                 : "no file matches the run's validation files " +
                                       run.val_files.front() + ": give --tokens");
  data::TokenFileOptions token_options;
  token_options.format = data::parse_token_format(run.config.data.format);
  token_options.raw_dtype_bytes = run.config.data.dtype_bytes;
  token_options.vocab_size = run.config.model.vocab_size;
  const WindowSample windows(files, settings.window_len, token_options, settings.seed);

  std::unique_ptr<tokenizer::Tokenizer> tok;
  bool needs_tokenizer = !settings.arc_file.empty();
  for (const auto& [task, file] : settings.task_files) needs_tokenizer |= !file.empty();
  if (needs_tokenizer) {
    std::string spec = options.tokenizer.empty() ? run.tokenizer : options.tokenizer;
    if (spec.empty()) {
      DB_REQUIRE(run.config.model.vocab_size == 257,
                 "the run's vocabulary is " + std::to_string(run.config.model.vocab_size) +
                     ": give --tokenizer (a tokenizer.json) for the evaluation files");
      spec = "bytes";
    }
    tok = tokenizer::load_tokenizer(spec);
    DB_REQUIRE(int64_t(tok->vocab_size()) <= run.config.model.vocab_size,
               "tokenizer " + tok->description() + " has " + std::to_string(tok->vocab_size()) +
                   " ids, the model only " + std::to_string(run.config.model.vocab_size));
  }

  if (hf) create_result_file(options, run.run_id, comm);
  Progress progress(comm, options.verbose);
  DiagContext ctx{model, run.config, settings, comm, windows, tok.get(), progress};
  if (rank0 && options.verbose) {
    std::printf("diagnose %s: %s L=%d d=%d, windows of %d tokens from %zu file(s), seed %llu\n",
                options.run_file.c_str(), run.config.model.arch.c_str(), run.config.model.n_layer,
                run.config.model.d_model, settings.window_len, files.size(),
                (unsigned long long)settings.seed);
    std::fflush(stdout);
  }
  // Which diagnostics run (the others are reported skipped with their reason), then an
  // estimate of their time before any starts.
  DiagnoseReport report;
  std::vector<const Diagnostic*> to_run;
  for (const Diagnostic& d : all_diagnostics()) {
    const bool chosen = options.only.empty() || std::find(options.only.begin(), options.only.end(),
                                                          d.name) != options.only.end();
    if (!chosen) continue;
    DiagnoseReport::Entry entry;
    entry.name = d.name;
    entry.skipped = d.not_applicable(ctx.scope());
    if (hf && d.needs_design_internals)
      entry.skipped = "needs a design's internals; a Hugging Face checkpoint is read as Pre-LN";
    if (entry.skipped.empty()) {
      to_run.push_back(&d);
      continue;
    }
    if (rank0 && options.verbose)
      std::printf("%s: skipped (%s)\n", d.name.c_str(), entry.skipped.c_str());
    report.entries.push_back(entry);
  }
  if (options.verbose && !to_run.empty()) print_time_estimate(ctx, to_run);

  for (const Diagnostic* chosen : to_run) {
    const Diagnostic& d = *chosen;
    DiagnoseReport::Entry entry;
    entry.name = d.name;
    const DiagCost cost = d.cost(ctx.scope());
    entry.forward_passes = cost.forward_passes;
    progress.begin(d.name, cost.forward_passes, cost.breakdown);
    std::vector<DiagnosticDataset> sets = d.run(ctx);
    entry.seconds = progress.end();
    for (DiagnosticDataset& set : sets) {
      // What a diagnostic writes is what it declares (`depthbench diagnose --help`, the docs).
      DB_REQUIRE(d.declares(set.name), "diagnostic " + d.name + " wrote diagnostics/" + set.name +
                                           ", which it does not declare in its datasets");
      set.attributes["diagnostic"] = d.name;
      set.attributes["run_id"] = run.run_id;
      set.attributes["forward_passes"] = cost.forward_passes;
      // How it ran (measured wall time on rank 0, ranks sharing the passes), beside what it
      // found: the reader sets it against plan's estimate and the run's training.
      set.attributes["seconds"] = entry.seconds;
      set.attributes["ranks"] = int64_t(comm.size());
      set.attributes["software_version"] = std::string(software_version());
      entry.datasets.push_back(set.name);
    }
    if (rank0) commit_diagnostics(options.run_file, sets);
    comm.barrier();
    report.entries.push_back(entry);
  }
  return report;
}

}  // namespace db::diag
