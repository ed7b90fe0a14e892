#include "diag/diagnostics_estimate.hpp"

#include <algorithm>

#include "diag/diagnostics.hpp"
#include "model/model.hpp"

namespace db::diag {

DiagnosticsEstimate estimate_diagnostics(const std::vector<std::string>& names,
                                         const ModelConfig& model, int seq_len) {
  const bool all = names == std::vector<std::string>{"all"};
  DiagSettings settings;
  settings.window_len = std::min(settings.window_len, seq_len);
  const DiagScope scope{settings, model.n_layer};
  DiagnosticsEstimate estimate;
  estimate.window_len = settings.window_len;
  for (const Diagnostic& d : all_diagnostics()) {
    if (!all && std::find(names.begin(), names.end(), d.name) == names.end()) continue;
    if (const std::string reason = d.not_applicable(scope); !reason.empty()) {
      estimate.skipped.emplace_back(d.name, reason);
      continue;
    }
    const DiagCost cost = d.cost(scope);
    estimate.forward_passes += cost.forward_passes;
    estimate.head_readouts += cost.head_readouts;
  }
  const double T = estimate.window_len;
  const double forward_per_token = flops_per_token(model, estimate.window_len) / 3;
  const double readout_per_token = 2.0 * double(model.vocab_size) * model.d_model;
  estimate.flops = T * (double(estimate.forward_passes) * forward_per_token +
                        double(estimate.head_readouts) * readout_per_token);
  return estimate;
}

}  // namespace db::diag
