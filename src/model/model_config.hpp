// The shape and design of one model (doc/architectures.md §0). Everything else about a run
// (recipe, data, backend) lives in the run config.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace db {

struct ModelConfig {
  std::string arch = "pre_ln";
  int n_layer = 4;
  int d_model = 64;
  int n_head = 16;
  int n_kv_head = 0;  // 0: equal to n_head (MHA)
  int ff = 0;         // 0: ceil16(8d/3), the sub-1B rule
  int vocab_size = 257;
  bool qk_norm = false;         // per-head RMSNorm on q and k before RoPE (Qwen3)
  bool tie_embeddings = false;  // the LM head is `embed` (no `lm_head` tensor)
  int head_size = 0;            // 0: d_model / n_head; imported checkpoints may set their own
  double rope_theta = 10000.0;
  double norm_eps = 1e-6;
  double init_std = 0.02;
  // Design-specific knobs by name (e.g. "keel_alpha"); missing keys take the design's default.
  std::map<std::string, std::string> design_options;

  int head_dim() const { return head_size > 0 ? head_size : d_model / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int ff_dim() const { return ff > 0 ? ff : ffn_hidden_sub1b(d_model); }
  double aspect_ratio() const { return double(d_model) / n_layer; }

  double option(const std::string& key, double fallback) const;
  std::string option(const std::string& key, const std::string& fallback) const;
  bool option(const std::string& key, bool fallback) const;

  // ceil16(8d/3): the SwiGLU hidden size of sub-1B models (spec §0).
  static int ffn_hidden_sub1b(int d) { return (8 * d + 47) / 48 * 16; }

  // Throws db::Error naming the first inconsistent field.
  void validate() const;
};

struct ParameterCounts {
  int64_t total = 0;
  int64_t backbone = 0;   // the blocks only
  int64_t embedding = 0;  // V·d of the input embedding
};

}  // namespace db
