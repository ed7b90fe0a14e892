#include "sweep/run_notes.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "model/residual/registry.hpp"

namespace db::sweep {

// The design's own note (its registry entry's run_note), so that no design is named here.
std::string design_note(const ModelConfig& model) {
  try {
    const DesignInfo& design = find_design(model.arch);
    return design.run_note ? design.run_note(model) : "";
  } catch (const Error&) {
    return "";  // an unknown design or an invalid option: the run itself reports it
  }
}

DiskEstimate estimate_disk(const RunConfig& config, const ParameterCounts& counts) {
  const double weight_bytes = 4.0 * double(counts.total);
  DiskEstimate disk;
  disk.weights = weight_bytes;
  disk.init_weights = config.save_initial_weights ? weight_bytes : 0;
  disk.checkpoint = 3 * weight_bytes;  // weights, AdamW m and v
  // Curve rows of about 16 float64 columns, the final per-window validation losses, and the
  // HDF5 structure and attributes (tens of KB); diagnostics add L x L matrices, also small.
  const double rows =
      double(config.recipe.steps) / double(std::max<int64_t>(1, config.log_interval));
  disk.run_file = 64e3 + rows * 16 * 8 + double(config.val_windows) * 8;
  return disk;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1e12)
    std::snprintf(text, sizeof text, "%.1f TB", bytes / 1e12);
  else if (bytes >= 1e9)
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e6)
    std::snprintf(text, sizeof text, "%.0f MB", bytes / 1e6);
  else
    std::snprintf(text, sizeof text, "%.0f KB", bytes / 1e3);
  return text;
}

}  // namespace db::sweep
