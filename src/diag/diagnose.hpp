// `depthbench diagnose`: loads a completed run (its config from the run file, its final
// weights from NAME.weights) or a Hugging Face checkpoint folder (--hf), computes the chosen
// diagnostics with their passes spread over the ranks of the communicator and writes each into the
// run file's diagnostics/ group (rank 0). The sweep calls run_diagnostics() at the end of a run
// when its suite asks for it.
#pragma once
#include <string>
#include <vector>

#include "core/communicator.hpp"
#include "diag/context.hpp"

namespace db::diag {

struct DiagnoseOptions {
  std::string run_file;                  // NAME.h5; with hf_dir: the result file (created)
  std::string hf_dir;                    // a Hugging Face checkpoint folder instead of a run
  std::vector<std::string> token_globs;  // empty: the run's validation files
  std::string tokenizer;                 // empty: "bytes" when the run's vocabulary is 257
  std::vector<std::string> only;         // empty: every diagnostic that applies
  int threads = 0;                       // CPU threads per rank (0 = cores / local ranks)
  std::string backend;                   // cpu | cuda | auto; empty: the run's train.backend
  bool verbose = true;
  DiagSettings settings;
};

struct DiagnoseReport {
  struct Entry {
    std::string name;
    int64_t forward_passes = 0;
    double seconds = 0;
    std::vector<std::string> datasets;
    std::string skipped;  // why it did not apply
  };
  std::vector<Entry> entries;
};

// Names of every diagnostic, in run order.
std::vector<std::string> diagnostic_names();

// The weights file beside a run file: NAME.h5 → NAME.weights.
std::string weights_path(const std::string& run_file);

DiagnoseReport run_diagnostics(const DiagnoseOptions& options, const Communicator& comm);

}  // namespace db::diag
