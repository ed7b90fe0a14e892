// The targets of next-token prediction, computed where the tokens are: position t of a window
// predicts token t + 1, the last position of each window predicts nothing (−1, no loss). On a
// GPU this is one small kernel on the device copy of the tokens, in order with the step's other
// work, instead of a host loop and a synchronous upload per micro-batch.
#pragma once
#include <cstdint>

#include "core/memory.hpp"

namespace db {

// targets[n] for n < rows = windows·seq_len; tokens and targets live in `space`.
void next_token_targets(MemorySpace space, int32_t* targets, const int32_t* tokens, int64_t rows,
                        int seq_len);

}  // namespace db
