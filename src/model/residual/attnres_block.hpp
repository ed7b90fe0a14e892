// Block AttnRes's block size, for the tools that warn about it (plan, sweep): S = 1 makes the
// design Full AttnRes (doc/architectures.md §10).
#pragma once
#include "model/model_config.hpp"

namespace db {

// S, the sublayers per block: attnres_block_size when given, else ceil(2L / attnres_blocks).
// Throws db::Error when an option is below 1.
int attnres_group_size(const ModelConfig& c);

}  // namespace db
