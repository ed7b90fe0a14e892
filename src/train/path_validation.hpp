// train.validate (doc/cuda.md, "Fast paths validated before the first step"): before its first
// step, a run on a backend with fast paths (the CUDA backend) runs its own first micro-batch with
// the reference paths and then with each fast path it is about to use added in turn — the
// attention path (cuDNN or flash against the fp32 reference kernel), bf16 activation storage
// against fp32, the fused kernels against the separate ops, a replayed CUDA graph against eager
// launches — and compares loss, gradient norm and every parameter's gradient with the reference
// run. A path outside its tolerance is switched off for this run (attention: the next path of
// auto's order, ending at the reference), with one line on stdout; `strict` refuses the run
// instead. What was measured and decided goes to the run file's `validation` group
// (doc/hdf5-schema.md). A backend without fast paths (the CPU) runs nothing and records "cpu:
// reference paths". The HPL residual check and HPCG's validation phase are the models: a
// benchmark states that its own numbers are valid.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "ops/ops_options.hpp"

namespace db {

class Backend;
class Communicator;
class RunFile;
struct RunConfig;

// train.validate: on (default) = check, fall back on a mismatch; off = trust the paths;
// strict = check, and refuse the run (a db::Error) on a mismatch.
enum class ValidateMode { off, on, strict };
// "on" | "off" | "strict", else db::Error naming the valid values.
ValidateMode parse_validate_mode(const std::string& name);
inline const char* validate_mode_choices() {
  return "on | off | strict";
}

// What one micro-batch gave: the summed loss, the gradient norm and every parameter's gradient.
struct MicroBatchResult {
  double loss = 0;
  double grad_norm = 0;
  std::vector<std::string> names;         // parameter names
  std::vector<std::vector<float>> grads;  // their gradients, as names
};

// A candidate against the reference: the relative differences of loss and gradient norm and the
// largest relative difference of one gradient tensor, ‖a − b‖₂ / ‖b‖₂, where ‖b‖₂ is at least 1%
// of a typical tensor's gradient norm (‖G‖₂ / √tensors: a nearly cancelling gradient, such as a
// bias's, is not measured against its own tiny norm).
struct Difference {
  double loss = 0;
  double grad_norm = 0;
  double largest_tensor = 0;
  std::string worst_tensor;
  double largest() const;  // the largest of the three
};
Difference compare_micro_batches(const MicroBatchResult& candidate,
                                 const MicroBatchResult& reference);

// One fast path checked: what was compared, what it measured, the tolerance, the decision.
struct PathCheck {
  std::string path;  // e.g. "attention cudnn", "bf16 storage", "fused kernels", "cuda graphs"
  Difference difference;
  double tolerance = 0;
  std::string decision;  // "kept", "switched off: <what runs instead>", "refused (strict)"
  bool passed() const { return difference.largest() <= tolerance; }
};

struct PathValidation {
  std::string mode;     // on | off | strict
  std::string summary;  // one line: "cpu: reference paths", "4 fast paths kept", "fell back: ..."
  bool fell_back = false;
  std::vector<PathCheck> checks;
  OpsOptions options;  // what the run goes on with
};

// The tolerance of each fast path (doc/cuda.md): the largest relative difference it may show
// against the reference paths on one micro-batch.
double path_tolerance(const std::string& path);
// For tests: the tolerance of `path` from now on (a negative value restores the documented one),
// so that a path that agrees is still seen to be switched off, recorded and refused.
void set_path_tolerance_for_test(const std::string& path, double tolerance);

// Runs the checks on this rank's first micro-batch (tokens: batch · seq_len ids) and agrees on
// every decision over the run's ranks (a path one rank rejects is off on all). Collective over
// `comm` on a backend with fast paths. strict: db::Error on a mismatch.
PathValidation validate_fast_paths(const RunConfig& config, const Backend& backend,
                                   const Communicator& comm, std::span<const int32_t> tokens,
                                   int64_t batch);

// Everything above for a run: on a backend with fast paths, reads this rank's first micro-batch
// of step 0 (the windows its first step starts with) and validates on it; else the no-op.
PathValidation validate_run_paths(const RunConfig& config, const Backend& backend,
                                  const Communicator& comm);

// The run file's `validation` group (doc/hdf5-schema.md). Rank 0, file open.
void record_path_validation(RunFile& file, const PathValidation& validation);

}  // namespace db
