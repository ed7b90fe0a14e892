#include "model/next_token_targets.hpp"

#include "ops/launch.hpp"

namespace db {
namespace {
struct NextToken {
  int32_t* targets;
  const int32_t* tokens;
  int seq_len;
  DB_HD void operator()(int64_t n) const {
    targets[n] = (n % seq_len == seq_len - 1) ? -1 : tokens[n + 1];
  }
};
}  // namespace

void next_token_targets(MemorySpace space, int32_t* targets, const int32_t* tokens, int64_t rows,
                        int seq_len) {
  for_each_index(space, rows, NextToken{targets, tokens, seq_len});
}

}  // namespace db
