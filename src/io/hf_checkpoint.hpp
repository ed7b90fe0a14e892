// Checkpoint folders in the Hugging Face layout (doc/export.md): config.json, model.safetensors
// or a sharded model.safetensors.index.json, tokenizer files. Two kinds, both read (`eval --hf`,
// `diagnose --hf`) and written (`export --format hf`):
// - LLaMA-family folders, which are our Pre-LN design: RMSNorm pre-norm, SwiGLU, RoPE (both pair
//   (i, i + head_dim/2), as HF's rotate_half), GQA, optional per-head QK-norm (Qwen3) and tied
//   embeddings. Every config field that would change the forward pass beyond that is refused by
//   name, never ignored. Pre-LN runs export as such a folder.
// - our own export of every other design (model_type depthbench): our typed model fields, our
//   tensor names below `model.`, and the Python modelling code transformers loads it with.
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

// Reads DIR: a LLaMA-family folder as a pre_ln model, or our own export of any other design
// (model_type depthbench) as that design; seq_len = max_position_embeddings, run_id = "hf:DIR".
// bf16, fp16 and fp64 tensors are converted to float32.
Checkpoint read_hf_checkpoint(const std::string& dir);

// The modelling code every other design ships with (src/io/hf_modeling/, installed to
// share/depthbench/hf_modeling): the plain PyTorch model, and the transformers config and
// wrapper that config.json's auto_map names.
inline constexpr const char* kHfModelingFiles[] = {
    "depthbench_model.py", "configuration_depthbench.py", "modeling_depthbench.py"};

// Writes a Hugging Face folder DIR: config.json and model.safetensors. A pre_ln model becomes
// LlamaForCausalLM (Qwen3ForCausalLM when it used QK-norm); any other design a DepthBench model
// (model_type depthbench, our tensor names below `model.`, our model fields typed) loaded through
// the kHfModelingFiles, which are copied from `modeling_dir`. eos_id < 0: none recorded.
void write_hf_checkpoint(const std::string& dir, const Checkpoint& weights, int64_t eos_id,
                         const std::string& modeling_dir = "");

}  // namespace db
