// Measured CPU training throughput, kept per machine: `depthbench bench --backend cpu` records
// each measurement in a small JSON cache, and `depthbench plan` estimates a CPU suite's hours
// from the measurement of this machine nearest in FLOPs per token (doc/sweeps.md, "Estimates").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace db::sweep {

struct ThroughputMeasurement {
  std::string machine;      // this_machine() where it was measured
  std::string measured_at;  // ISO 8601, UTC
  std::string arch;
  int n_layer = 0, d_model = 0, seq_len = 0;
  int64_t micro_batch = 0;
  int threads_per_rank = 0;
  int ranks = 1;  // benches that ran at once (mpirun -np N depthbench bench): they share the cores
  double flops_per_token = 0;
  double tokens_per_second = 0;  // of one rank; the slowest rank's when several ran

  double gflops_per_rank() const { return flops_per_token * tokens_per_second / 1e9; }
  // "pre_ln L=4 d=256 T=256 B=4, 2 threads x 1 rank(s), 2026-12-06"
  std::string describe() const;
};

// Host name, CPU model and logical core count: a measurement is only used on the same machine.
std::string this_machine();

// $DEPTHBENCH_CACHE_DIR, else $XDG_CACHE_HOME/depthbench, else $HOME/.cache/depthbench; the
// file is cpu-throughput.json there.
std::string throughput_cache_path();

struct ThroughputCache {
  std::vector<ThroughputMeasurement> measurements;
  std::string problem;  // why an existing cache could not be read ("" when fine or absent)
};

// Never throws: an unreadable or malformed cache comes back empty with its problem named, so
// `plan` falls back to the stated default and says why.
ThroughputCache read_throughput_cache(const std::string& path);

// Adds a measurement, replacing an earlier one of the same machine, shape, threads and ranks;
// written to a temporary file and renamed, so a reader never sees half a file. A malformed cache
// is replaced. Throws db::Error when the folder cannot be written.
void record_throughput(const std::string& path, const ThroughputMeasurement& measurement);

// This machine's measurement nearest to a run: of its shape (L, d) if there is one, then the
// nearest in FLOPs per token (by ratio), the newest on a tie.
std::optional<ThroughputMeasurement> nearest_measurement(const ThroughputCache& cache,
                                                         const std::string& machine,
                                                         const ModelConfig& model,
                                                         double flops_per_token);

}  // namespace db::sweep
