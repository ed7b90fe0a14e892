// A float model holding given weights on the backend a command asks for, for the commands that
// evaluate existing weights (diagnose, eval): products in fp32 on either backend.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "model/model.hpp"

namespace db {

// backend: a registered backend's name (on the device chosen at start-up) or "auto". Throws
// db::Error when the backend cannot run here.
std::unique_ptr<Model<float>> model_on_backend(const ModelConfig& config,
                                               std::span<const float> params,
                                               const std::string& backend);

}  // namespace db
