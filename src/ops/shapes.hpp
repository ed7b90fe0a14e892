// The shapes the ops take, shared by every backend (CPU, CUDA) and the model code.
#pragma once
#include <cstdint>

namespace db {

struct AttentionShape {
  int64_t batch;
  int seq_len, heads, kv_heads, head_dim;
};

struct HeadShape {
  int64_t rows;
  int d, vocab;
};

struct ModaShape {
  int64_t batch;
  int seq_len, heads, kv_heads, head_dim;
  int depth;         // depth entries per token read by this call
  int depth_stride;  // entries stored per token (≥ depth): entry m of row n (= b·T + t), kv head
                     // g lies at ((n·depth_stride + m)·kv_heads + g)·head_dim
};

}  // namespace db
