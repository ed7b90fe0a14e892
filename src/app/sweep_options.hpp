// Command-line options shared by `depthbench plan` and `depthbench sweep`.
#pragma once
#include <string>

namespace db::app {

struct SweepOptions {
  std::string suite_file;
  std::string out_dir;  // default: runs/<suite name>
  int ranks_per_run = 1;
  bool quiet = false;         // sweep: no progress lines
  bool verbose = false;       // sweep: every run's step lines on stdout too (always in NAME.log)
  bool retry_failed = false;  // sweep: train runs recorded `failed` again
  bool rerun_stale = false;   // sweep: retrain runs whose file holds another config
  double mfu = 0;             // plan: 0 = the suite's estimate.mfu
  double peak_tflops = 0;     // plan: 0 = the suite's estimate.peak_tflops_per_gpu
};

// Returns false when --help was printed. Throws db::Error on bad options.
bool parse_sweep_options(int argc, char** argv, bool is_sweep, SweepOptions& options);

}  // namespace db::app
