#include "train/run_metadata.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "core/rng.hpp"
#include "core/version.hpp"
#include "io/stored_paths.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "ops/backend.hpp"

namespace db {
namespace {

// Absolute, so that a command run from another directory finds the data (io/stored_paths.hpp);
// the config attribute keeps the patterns as written, which the run id hashes.
std::string joined_absolute(const std::vector<std::string>& patterns) {
  std::string s;
  for (const auto& p : patterns) {
    if (!s.empty()) s += ';';
    s += absolute_pattern(p);
  }
  return s;
}

}  // namespace

bool changes_results(const std::string& ini_line) {
  const char* const ignored[] = {
      "threads",
      "log_interval",
      "checkpoint_interval",
      "save_initial_weights",
      "dir ",
      "name ",
      "backend ",  // the same experiment on either backend: a checkpoint moves between them
      "stop_after_steps",
      "attention ",  // an implementation of the same attention, like the backend (doc/cuda.md)
      "reduce_bucket_mb",  // when the gradient sum starts; MPI's sum is the same bits either way
      "recompute ",        // the same gradients, bit for bit (doc/designs.md "Recomputation")
      // The same kernels on the same data, launched from a recorded graph (doc/cuda.md).
      "cuda_graphs ",
      "fused_kernels ",  // the same math in fewer kernels (doc/performance.md, lever 3)
      "validate ",       // a check before the first step; what it decides is in `validation`
      // bf16 storage rounds what it stores, so an explicit choice is part of the experiment;
      // the default leaves the identities of runs made before the key existed unchanged.
      "activation_dtype = auto",
      // Likewise bf16 state: fp32, the default, is how every run before the key computed.
      "state_dtype = fp32",
  };
  for (const char* key : ignored)
    if (ini_line.rfind(key, 0) == 0) return false;
  return true;
}

std::string run_id(const RunConfig& config) {
  std::istringstream in(config.to_ini());
  std::string line, identity;
  while (std::getline(in, line))
    if (changes_results(line)) identity += line + "\n";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash_string(identity));
  return hex;
}

std::map<std::string, std::string> result_keys(const std::string& ini_text) {
  std::map<std::string, std::string> keys;
  std::istringstream in(ini_text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos || !changes_results(line)) continue;
    keys[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return keys;
}

std::string iso_time_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

void write_run_metadata(RunFile& f, const RunConfig& c, int ranks, bool resumed,
                        const Backend* backend) {
  const ModelConfig& m = c.model;
  const Recipe& r = c.recipe;
  const ParameterCounts counts = count_parameters(m);
  f.set_attribute("run_id", run_id(c));
  f.set_attribute("run_name", c.run_name());
  f.set_attribute("suite", c.suite);
  f.set_attribute("arch", m.arch);
  f.set_attribute("design_options", design_options_text(m));
  // The registry's display name and order, so the postprocess needs no table of its own.
  f.set_attribute("design_title", find_design(m.arch).title);
  f.set_attribute("design_order", int64_t(design_order(m.arch)));
  f.set_attribute("d_model", int64_t(m.d_model));
  f.set_attribute("n_layer", int64_t(m.n_layer));
  f.set_attribute("n_head", int64_t(m.n_head));
  f.set_attribute("n_kv_head", int64_t(m.kv_heads()));
  f.set_attribute("head_dim", int64_t(m.head_dim()));
  f.set_attribute("ff", int64_t(m.ff_dim()));
  f.set_attribute("vocab_size", int64_t(m.vocab_size));
  f.set_attribute("seq_len", int64_t(r.seq_len));
  f.set_attribute("aspect_ratio", m.aspect_ratio());
  f.set_attribute("params_total", counts.total);
  f.set_attribute("params_backbone", counts.backbone);
  f.set_attribute("params_embedding", counts.embedding);
  f.set_attribute("learning_rate", r.learning_rate);
  f.set_attribute("global_batch_sequences", r.global_batch_sequences);
  f.set_attribute("micro_batch_sequences", r.micro_batch_sequences);
  f.set_attribute("steps", r.steps);
  f.set_attribute("warmup_steps", r.warmup_steps());
  f.set_attribute("min_lr_ratio", r.min_lr_ratio);
  f.set_attribute("weight_decay", r.weight_decay);
  f.set_attribute("beta1", r.beta1);
  f.set_attribute("beta2", r.beta2);
  f.set_attribute("adam_eps", r.adam_eps);
  f.set_attribute("grad_clip", r.grad_clip);
  f.set_attribute("seed", int64_t(c.seed));
  f.set_attribute("train_files", joined_absolute(c.data.train_files));
  f.set_attribute("val_files", joined_absolute(c.data.val_files));
  f.set_attribute("tokens_planned", r.steps * r.tokens_per_step());
  f.set_attribute("backend", c.backend);
  f.set_attribute("precision", c.precision);  // the CUDA arithmetic; the CPU computes in fp32
  f.set_attribute("attention", c.attention);  // the requested path; the trainer adds
                                              // `attention_paths`, the one each shape ran
  f.set_attribute("recompute", c.recompute);  // what the forward kept (train.recompute)
  if (backend) {
    f.set_attribute("device_name", backend->device_name());
    // Results do not depend on these (gemm.cpp, parallel.hpp); recorded to let a user check.
    f.set_attribute("cpu_threads", int64_t(backend->host_threads()));
    for (const auto& [key, value] : backend->properties()) f.set_attribute(key, value);
  }
  f.set_attribute("ranks", int64_t(ranks));
  f.set_attribute("software_version", std::string(software_version()));
  f.set_attribute("git_commit", std::string(git_commit()));
  f.set_attribute("flops_per_token", flops_per_token(m, r.seq_len));
  f.set_attribute(
      "flops_convention",
      std::string(
          "PaLM: 6N + 12*L*d*T (+ design extras), N = parameters without the input embedding"));
  if (!resumed) f.set_attribute("start_time", iso_time_now());
  f.set_attribute("status_step", int64_t(-1));
  f.set_attribute("status_reason", std::string(""));
  f.set_attribute("config", c.to_ini());
}

}  // namespace db
