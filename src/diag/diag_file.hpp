// The diagnostics' results and how they enter a run file (doc/hdf5-schema.md `/diagnostics`):
// every result is one dataset with attributes stating its definition, data, sample counts and
// seed. commit_diagnostics() replaces datasets atomically: RUN.h5 is copied to RUN.h5.diag.tmp, the
// named datasets of `diagnostics/` are (re)written there, the copy is fsynced and renamed over
// RUN.h5. Every other group and attribute keeps its bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace db::diag {

using AttributeValue = std::variant<std::string, double, int64_t>;

struct DiagnosticDataset {
  std::string name;            // below diagnostics/, e.g. "causal_score"
  std::vector<int64_t> shape;  // {} = scalar
  std::vector<double> values;  // row-major, float64 (NaN where undefined)
  bool integer = false;        // stored as int64 (e.g. dead_segment)
  std::map<std::string, AttributeValue> attributes;

  static DiagnosticDataset scalar(std::string name, double value);
  static DiagnosticDataset vector(std::string name, std::vector<double> values);
  static DiagnosticDataset matrix(std::string name, int64_t rows, int64_t cols,
                                  std::vector<double> values);
};

// Writes the datasets into `run_file` atomically (see above). Throws db::Error naming the file.
void commit_diagnostics(const std::string& run_file, const std::vector<DiagnosticDataset>& sets);

// Reads diagnostics/<name> back (tests and tools): values as float64 and its shape.
DiagnosticDataset read_diagnostic(const std::string& run_file, const std::string& name);

}  // namespace db::diag
