#include "model/model_on_backend.hpp"

#include <mpi.h>

#include "core/backend.hpp"

namespace db {

std::unique_ptr<Model<float>> model_on_backend(const ModelConfig& config,
                                               std::span<const float> params,
                                               const std::string& backend) {
  const Backend chosen = choose_backend(backend);
  if (chosen == Backend::cuda) select_gpu(MPI_COMM_WORLD);
  auto model = std::make_unique<Model<float>>(config, chosen, Precision::fp32);
  model->params().copy_values_from_host(params);
  return model;
}

}  // namespace db
