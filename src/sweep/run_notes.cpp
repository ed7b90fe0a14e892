#include "sweep/run_notes.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "model/residual/attnres_block.hpp"

namespace db::sweep {

std::string design_note(const ModelConfig& model) {
  if (model.arch != "attnres_block") return "";
  try {
    if (attnres_group_size(model) != 1) return "";
  } catch (const Error&) {
    return "";  // an invalid option: the run itself reports it
  }
  // §10: with one sublayer per block every block sum is one sublayer's output, so the sources
  // are exactly Full AttnRes's; the run would measure attnres_full under another name.
  return "Block AttnRes at L = " + std::to_string(model.n_layer) +
         " has blocks of one sublayer (S = ceil(2L / attnres_blocks) = 1), so it is Full "
         "AttnRes; use L > attnres_blocks / 2 or a smaller model.attnres_blocks";
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
