// Everything one training run needs, read from an INI file with command-line overrides
// (doc/config.md lists every key). Unknown keys are rejected with the list of valid ones.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "ops/ops_options.hpp"
#include "train/recipe.hpp"

namespace db {

struct DataConfig {
  std::vector<std::string> train_files;  // glob patterns, expanded in order
  std::vector<std::string> val_files;
  std::string format = "auto";  // auto | olmo | npy | llmc
  int dtype_bytes = 0;  // OLMo raw arrays: 2 (uint16) or 4 (uint32); 0 = manifest or name, else 2
};

struct RunConfig {
  ModelConfig model;
  Recipe recipe;
  DataConfig data;
  uint64_t seed = 1234;
  std::string suite = "single";
  std::string backend = "cpu";
  std::string precision = "bf16";   // CUDA arithmetic: bf16 | fp32 (core/precision.hpp)
  std::string attention = "auto";   // CUDA attention path (ops/ops_options.hpp)
  std::string recompute = "none";   // none | blocks (model/recompute.hpp)
  int threads = 0;                  // CPU threads; 0 = all cores of this rank's share
  int64_t log_interval = 10;        // steps between progress lines and curve rows
  int64_t val_interval = 50;        // steps between validation evaluations (and at the end)
  int64_t val_windows = 32;         // validation windows evaluated each time
  double divergence_margin = 3.0;   // loss above ln(V) + margin (after warm-up) = diverged
  int64_t checkpoint_interval = 0;  // steps between checkpoints (0 = only on signal / never)
  int64_t stop_after_steps = 0;     // checkpoint and stop after this many steps (0 = never)
  // NAME.init.weights before the first step; the sweep turns it on unless its recipe says no.
  bool save_initial_weights = false;
  // MiB of gradients per all-reduce started during the last backward (0 = one sum after it).
  double reduce_bucket_mb = 25;
  // CUDA graph replay of micro-batches: auto | on | off (ops/ops_options.hpp)
  std::string cuda_graphs = "auto";
  // What the sublayer cores store activations in: auto | fp32 | bf16 (ops/ops_options.hpp)
  std::string activation_dtype = "auto";
  std::string fused_kernels = "on";
  // What the designs' own state is rounded to between sublayers: fp32 | bf16 (ops_options.hpp)
  std::string state_dtype = "fp32";
  // Fast paths checked against the reference on the first micro-batch: on | off | strict
  // (train/path_validation.hpp)
  std::string validate = "on";
  std::string out_dir = "runs";
  std::string name;  // run name; empty = derived from suite, design, shape, lr

  // A file-system friendly name: SUITE__ARCH__L4_d64__lr2e-03.
  std::string derived_name() const;
  std::string run_name() const { return name.empty() ? derived_name() : name; }
  // The ops and model options (precision, attention, cuda_graphs, activation_dtype,
  // fused_kernels, state_dtype) as the backend and model take them (db::Error on a bad value).
  OpsOptions ops_options() const;
  // The resolved config as INI text (every key, defaults included).
  std::string to_ini() const;
};

// Parses `--config FILE` and `--section.key=value` overrides. Returns false when --help was
// printed. Throws db::Error on unknown keys or bad values.
bool parse_run_config(int argc, char** argv, RunConfig& config, const std::string& usage);
// Parses INI text (no command line), e.g. a suite's run block.
RunConfig parse_run_config_text(const std::string& ini_text);
// Every valid key "section.key" with its help text.
std::vector<std::pair<std::string, std::string>> run_config_keys();

}  // namespace db
