#include "model/model_on_backend.hpp"

#include "ops/backend.hpp"

namespace db {

std::unique_ptr<Model<float>> model_on_backend(const ModelConfig& config,
                                               std::span<const float> params,
                                               const std::string& backend) {
  // The device was chosen at start-up (start_backends): no collective here.
  // fp32 products and (so) the reference attention: evaluation and diagnostics are parity work.
  auto model = std::make_unique<Model<float>>(config, choose_backend(backend), OpsOptions{});
  model->params().copy_values_from_host(params);
  return model;
}

}  // namespace db
