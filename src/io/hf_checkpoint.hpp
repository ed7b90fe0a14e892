// LLaMA-family checkpoint folders in the Hugging Face layout (doc/export.md): config.json,
// model.safetensors or a sharded model.safetensors.index.json, tokenizer files. Read for
// `eval --hf` and `diagnose --hf`, written by `export --format hf` for Pre-LN runs. Such a model
// is our Pre-LN design: RMSNorm pre-norm, SwiGLU, RoPE (both pair (i, i + head_dim/2), as HF's
// rotate_half), GQA, optional per-head QK-norm (Qwen3) and tied embeddings. Every config field
// that would change the forward pass beyond that is refused by name, never ignored.
#pragma once
#include <cstdint>
#include <string>

#include "io/checkpoint.hpp"
#include "util/json.hpp"

namespace db {

// The model of a Hugging Face config.json; `context` receives max_position_embeddings.
// `source` names the file in messages.
ModelConfig model_from_hf_config(const JsonValue& config, const std::string& source,
                                 int64_t& context);

// Reads DIR as a pre_ln model; seq_len = max_position_embeddings, run_id = "hf:DIR". bf16, fp16
// and fp64 tensors are converted to float32.
Checkpoint read_hf_checkpoint(const std::string& dir);

// Writes DIR/config.json (LlamaForCausalLM, or Qwen3ForCausalLM when the run used QK-norm) and
// DIR/model.safetensors for a pre_ln model; other designs are refused. eos_id < 0: none recorded.
void write_hf_checkpoint(const std::string& dir, const Checkpoint& weights, int64_t eos_id);

}  // namespace db
