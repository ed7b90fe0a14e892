#include "io/hf_checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/format.hpp"
#include "io/model_fields.hpp"
#include "io/safetensors.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"

namespace db {
namespace {

namespace fs = std::filesystem;

// Our block tensors (doc/parameters.md) and their names below `model.layers.{i}.`.
const std::map<std::string, std::string> kBlockTensors = {
    {"attn_norm", "input_layernorm.weight"}, {"ffn_norm", "post_attention_layernorm.weight"},
    {"wq", "self_attn.q_proj.weight"},       {"wk", "self_attn.k_proj.weight"},
    {"wv", "self_attn.v_proj.weight"},       {"wo", "self_attn.o_proj.weight"},
    {"q_norm", "self_attn.q_norm.weight"},   {"k_norm", "self_attn.k_norm.weight"},
    {"w1", "mlp.gate_proj.weight"},          {"w3", "mlp.up_proj.weight"},
    {"w2", "mlp.down_proj.weight"},
};

// The Hugging Face name of one of our pre_ln tensors. Both conventions store a linear layer as
// [out, in] and pair RoPE dimensions the same way, so the values need no permutation.
std::string hf_name(const std::string& ours) {
  if (ours == "embed") return "model.embed_tokens.weight";
  if (ours == "final_norm") return "model.norm.weight";
  if (ours == "lm_head") return "lm_head.weight";
  const size_t dot = ours.find('.', 7);  // "blocks.{i}.{suffix}"
  DB_REQUIRE(ours.rfind("blocks.", 0) == 0 && dot != std::string::npos &&
                 kBlockTensors.count(ours.substr(dot + 1)),
             "tensor " + ours + " has no Hugging Face counterpart");
  return "model.layers." + ours.substr(7, dot - 7) + "." + kBlockTensors.at(ours.substr(dot + 1));
}

// Fields that describe a checkpoint without changing its forward pass in evaluation.
const std::set<std::string> kInformationalFields = {
    "architectures",        "model_type",        "_name_or_path",     "bos_token_id",
    "eos_token_id",         "pad_token_id",      "torch_dtype",       "dtype",
    "transformers_version", "initializer_range", "attention_dropout", "use_cache",
    "pretraining_tp",    // tensor-parallel slicing of the same products
    "is_llama_config"};  // nanotron's marker (SmolLM)

// Fields of mixture-of-experts configs, refused with that reason.
const std::set<std::string> kMoeFields = {"num_experts",
                                          "num_local_experts",
                                          "num_experts_per_tok",
                                          "n_routed_experts",
                                          "n_shared_experts",
                                          "moe_intermediate_size",
                                          "shared_expert_intermediate_size",
                                          "decoder_sparse_step",
                                          "router_aux_loss_coef",
                                          "output_router_logits",
                                          "norm_topk_prob",
                                          "mlp_only_layers"};

const std::set<std::string> kModelTypes = {"llama", "mistral", "qwen3"};

std::string json_text(const JsonValue& v) {
  if (v.is_null()) return "null";
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_string()) return json_quote(v.as_string());
  if (v.is_number()) return exact_number_text(v.as_number());
  return v.is_array() ? "[...]" : "{...}";
}

// Reads the fields of a config.json, each at most once; what is left unread at the end is
// refused by name.
class HfConfigReader {
 public:
  HfConfigReader(const JsonValue& config, const std::string& source) : source_(source) {
    DB_REQUIRE(config.is_object(), source + " is not a JSON object");
    for (const auto& [key, value] : config.as_object()) fields_[key] = &value;
  }

  const JsonValue* take(const std::string& key) {
    const auto it = fields_.find(key);
    if (it == fields_.end()) return nullptr;
    const JsonValue* value = it->second;
    fields_.erase(it);
    return value;
  }

  long long integer(const std::string& key, long long fallback, bool required = false) {
    const JsonValue* v = take(key);
    DB_REQUIRE(v || !required, source_ + " has no '" + key + "'");
    return v ? v->as_integer((source_ + ": " + key).c_str(), 1, 1LL << 40) : fallback;
  }

  double number(const std::string& key, double fallback) {
    const JsonValue* v = take(key);
    return v ? v->as_number((source_ + ": " + key).c_str()) : fallback;
  }

  bool boolean(const std::string& key, bool fallback) {
    const JsonValue* v = take(key);
    return v && !v->is_null() ? v->as_bool((source_ + ": " + key).c_str()) : fallback;
  }

  // The field must be absent or hold one of the accepted values (compared as JSON text).
  void require(const std::string& key, const std::set<std::string>& accepted,
               const std::string& reason) {
    const JsonValue* v = take(key);
    if (v && !accepted.count(json_text(*v)))
      throw Error(source_ + ": " + key + " = " + json_text(*v) + " is not supported (" + reason +
                  ")");
  }

  // Every field not taken: informational ones pass, the first other one is refused by name.
  void refuse_the_rest() {
    for (const auto& [key, value] : fields_) {
      if (kInformationalFields.count(key)) continue;
      if (kMoeFields.count(key))
        throw Error(source_ + ": " + key + " = " + json_text(*value) +
                    " is not supported (mixture of experts)");
      throw Error(source_ + ": field '" + key + "' = " + json_text(*value) +
                  " is not supported by the LLaMA-family loader (doc/export.md lists the fields "
                  "it reads)");
    }
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, const JsonValue*> fields_;
};

// rope_scaling / rope_parameters: only plain RoPE ("default") is implemented; its θ is returned.
double read_rope(HfConfigReader& r, double theta) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const JsonValue* v = r.take(key);
    if (!v || v->is_null()) continue;
    DB_REQUIRE(v->is_object(), r.source() + ": " + key + " is not an object");
    const JsonValue* kind = v->find("rope_type") ? v->find("rope_type") : v->find("type");
    if (kind && !(kind->is_string() && kind->as_string() == "default"))
      throw Error(r.source() + ": " + key + " of type " + json_text(*kind) +
                  " is not supported (only plain RoPE is implemented, no rope scaling)");
    for (const auto& [field, value] : v->as_object()) {
      if (field == "rope_type" || field == "type") continue;
      if (field == "rope_theta") {
        theta = value.as_number("rope_theta");
        continue;
      }
      throw Error(r.source() + ": " + key + "." + field + " = " + json_text(value) +
                  " is not supported (only plain RoPE is implemented, no rope scaling)");
    }
  }
  return theta;
}

JsonValue read_json(const std::string& path) {
  DB_REQUIRE(fs::exists(path), path + " not found");
  try {
    return parse_json(read_text_file(path));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

// Which file of DIR holds each tensor: model.safetensors, or the shards of
// model.safetensors.index.json.
std::map<std::string, std::string> tensor_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  const std::string single = dir + "/model.safetensors", index = single + ".index.json";
  if (fs::exists(single)) {
    const SafetensorsFile file(single);
    for (const auto& [name, entry] : file.tensors()) files[name] = single;
    return files;
  }
  DB_REQUIRE(fs::exists(index),
             dir + " holds neither model.safetensors nor model.safetensors.index.json");
  const JsonValue root = read_json(index);
  const JsonValue* map = root.find("weight_map");
  DB_REQUIRE(map && map->is_object(), index + " has no weight_map object");
  for (const auto& [name, file] : map->as_object()) {
    const std::string& shard = file.as_string("weight_map entry");
    DB_REQUIRE(shard.find('/') == std::string::npos && shard != "." && shard != "..",
               index + ": shard '" + shard + "' must be a file name inside " + dir);
    files[name] = dir + "/" + shard;
  }
  return files;
}

// Whether a checkpoint tensor is a buffer derived from the config (old LLaMA checkpoints stored
// the RoPE frequencies); it carries no weights.
bool derived_buffer(const std::string& name) {
  const std::string suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A config.json from its fields (name, JSON text), in order, with the end-of-document id as
// both BOS and EOS when the tokenizer has one.
std::string config_text(std::vector<std::pair<std::string, std::string>> fields, int64_t eos_id) {
  if (eos_id >= 0) {
    fields.push_back({"bos_token_id", std::to_string(eos_id)});
    fields.push_back({"eos_token_id", std::to_string(eos_id)});
  }
  std::string json = "{";
  for (size_t i = 0; i < fields.size(); ++i)
    json +=
        std::string(i ? "," : "") + "\n  " + json_quote(fields[i].first) + ": " + fields[i].second;
  return json + "\n}\n";
}

std::string config_json(const Checkpoint& weights, int64_t eos_id) {
  const ModelConfig& m = weights.model;
  const bool qwen3 = m.qk_norm;  // LlamaForCausalLM has no QK-norm; Qwen3 is LLaMA plus QK-norm
  std::vector<std::pair<std::string, std::string>> fields = {
      {"architectures", qwen3 ? "[\"Qwen3ForCausalLM\"]" : "[\"LlamaForCausalLM\"]"},
      {"model_type", qwen3 ? "\"qwen3\"" : "\"llama\""},
      {"vocab_size", std::to_string(m.vocab_size)},
      {"hidden_size", std::to_string(m.d_model)},
      {"intermediate_size", std::to_string(m.ff_dim())},
      {"num_hidden_layers", std::to_string(m.n_layer)},
      {"num_attention_heads", std::to_string(m.n_head)},
      {"num_key_value_heads", std::to_string(m.kv_heads())},
      {"head_dim", std::to_string(m.head_dim())},
      {"hidden_act", "\"silu\""},
      {"max_position_embeddings", std::to_string(weights.seq_len)},
      {"rms_norm_eps", exact_number_text(m.norm_eps)},
      {"rope_theta", exact_number_text(m.rope_theta)},
      {"rope_scaling", "null"},
      {"attention_bias", "false"},
      {"attention_dropout", "0.0"},
      {"tie_word_embeddings", m.tie_embeddings ? "true" : "false"},
      {"initializer_range", exact_number_text(m.init_std)},
      {"torch_dtype", "\"float32\""},
      {"use_cache", "true"},
  };
  if (qwen3) {
    fields.push_back({"use_sliding_window", "false"});
    fields.push_back({"sliding_window", "null"});
  } else {
    fields.push_back({"mlp_bias", "false"});
  }
  return config_text(fields, eos_id);
}

// config.json of a design other than pre_ln: our model fields (doc/parameters.md derives every
// tensor shape from them) and what transformers needs to find the shipped code.
std::string depthbench_config_json(const Checkpoint& weights, int64_t eos_id) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"architectures", "[\"DepthBenchForCausalLM\"]"},
      {"model_type", "\"depthbench\""},
      {"auto_map",
       "{\"AutoConfig\": \"configuration_depthbench.DepthBenchConfig\", "
       "\"AutoModelForCausalLM\": \"modeling_depthbench.DepthBenchForCausalLM\"}"},
  };
  for (const auto& member : model_json_members(weights.model)) fields.push_back(member);
  fields.push_back({"max_position_embeddings", std::to_string(weights.seq_len)});
  fields.push_back({"run_id", json_quote(weights.run_id)});
  fields.push_back({"torch_dtype", "\"float32\""});
  fields.push_back({"use_cache", "false"});
  return config_text(fields, eos_id);
}

// A design option of our config.json back to the text of a weight file's design_options.
std::string option_text(const JsonValue& value) {
  if (value.is_null()) return "";
  if (value.is_bool()) return value.as_bool() ? "true" : "false";
  if (value.is_number()) return exact_number_text(value.as_number());
  return value.as_string("design option");
}

// The model of our own config.json (a design other than pre_ln): the typed model fields
// depthbench_config_json wrote; `context` receives max_position_embeddings.
ModelConfig model_from_depthbench_config(const JsonValue& config, const std::string& source,
                                         int64_t& context) {
  const JsonValue* length = config.find("max_position_embeddings");
  context = length
                ? length->as_integer((source + ": max_position_embeddings").c_str(), 1, 1LL << 40)
                : 2048;
  return model_from_fields(
      [&](const std::string& key, const FieldValue& kind) -> std::optional<FieldValue> {
        const JsonValue* v = config.find(key);
        if (!v) return std::nullopt;
        const std::string what = source + ": " + key;
        if (key == "design_options") {
          std::string text;
          for (const auto& [option, value] : v->as_object(what.c_str()))
            text += (text.empty() ? "" : ";") + option + "=" + option_text(value);
          return text;
        }
        if (std::holds_alternative<std::string>(kind)) return v->as_string(what.c_str());
        if (std::holds_alternative<int64_t>(kind))
          return v->is_bool() ? int64_t(v->as_bool())
                              : int64_t(v->as_integer(what.c_str(), 0, 1LL << 40));
        return v->as_number(what.c_str());
      },
      source);
}

}  // namespace

ModelConfig model_from_hf_config(const JsonValue& config, const std::string& source,
                                 int64_t& context) {
  HfConfigReader r(config, source);
  const JsonValue* type = r.take("model_type");
  DB_REQUIRE(type && type->is_string(), source + " has no model_type");
  const std::string model_type = type->as_string();
  if (!kModelTypes.count(model_type))
    throw Error(source + ": model_type '" + model_type +
                "' is not supported (llama, mistral and qwen3 are)");
  ModelConfig m;
  m.arch = "pre_ln";
  m.d_model = int(r.integer("hidden_size", 0, true));
  m.n_layer = int(r.integer("num_hidden_layers", 0, true));
  m.n_head = int(r.integer("num_attention_heads", 0, true));
  m.n_kv_head = int(r.integer("num_key_value_heads", m.n_head));
  m.ff = int(r.integer("intermediate_size", 0, true));
  m.vocab_size = int(r.integer("vocab_size", 0, true));
  const int head_dim = int(r.integer("head_dim", m.d_model / m.n_head));
  if (head_dim != m.d_model / m.n_head || m.d_model % m.n_head != 0) m.head_size = head_dim;
  m.qk_norm = model_type == "qwen3";  // Qwen3 always normalises q and k per head
  m.tie_embeddings = r.boolean("tie_word_embeddings", false);
  m.norm_eps = r.number("rms_norm_eps", 1e-6);
  m.rope_theta = read_rope(r, r.number("rope_theta", 10000.0));
  context = r.integer("max_position_embeddings", 2048);
  r.require("hidden_act", {"\"silu\""}, "SwiGLU uses SiLU");
  r.require("attention_bias", {"false"}, "biases");
  r.require("rope_interleaved", {"false"}, "RoPE pairs (i, i + head_dim/2), as rotate_half");
  r.require("mlp_bias", {"false"}, "biases");
  r.require("use_sliding_window", {"false"}, "sliding-window attention");
  const JsonValue* window = r.take("sliding_window");
  // Qwen3 records a window size that only applies with use_sliding_window.
  if (window && !window->is_null() && model_type != "qwen3")
    throw Error(source + ": sliding_window = " + json_text(*window) +
                " is not supported (sliding-window attention)");
  r.take("max_window_layers");  // only meaningful with use_sliding_window, refused above
  if (const JsonValue* layers = r.take("layer_types"))
    for (const JsonValue& kind : layers->as_array("layer_types"))
      DB_REQUIRE(kind.is_string() && kind.as_string() == "full_attention",
                 source + ": layer_types = " + json_text(kind) +
                     " is not supported (sliding-window attention)");
  r.refuse_the_rest();
  m.validate();
  return m;
}

Checkpoint read_hf_checkpoint(const std::string& dir) {
  DB_REQUIRE(fs::is_directory(dir), "Hugging Face checkpoint folder " + dir + " not found");
  Checkpoint c;
  c.run_id = "hf:" + dir;
  const std::string source = dir + "/config.json";
  const JsonValue config = read_json(source);
  const JsonValue* type = config.find("model_type");
  // Our own export of a design other than pre_ln: our names below `model.`.
  const bool ours = type && type->is_string() && type->as_string() == "depthbench";
  c.model = ours ? model_from_depthbench_config(config, source, c.seq_len)
                 : model_from_hf_config(config, source, c.seq_len);
  auto name_of = [ours](const std::string& name) { return ours ? "model." + name : hf_name(name); };
  const std::map<std::string, std::string> files = tensor_files(dir);
  std::map<std::string, std::unique_ptr<SafetensorsFile>> opened;
  auto file_of = [&](const std::string& name) -> const SafetensorsFile& {
    std::unique_ptr<SafetensorsFile>& f = opened[files.at(name)];
    if (!f) f = std::make_unique<SafetensorsFile>(files.at(name));
    return *f;
  };

  const ParameterLayout layout = build_layout(c.model);
  c.params.resize(layout.storage_size());
  std::set<std::string> used;
  for (const ParameterSpec& spec : layout.specs()) {
    const std::string name = name_of(spec.name);
    DB_REQUIRE(files.count(name), dir + " has no tensor " + name);
    const SafetensorsFile& file = file_of(name);
    const std::vector<int64_t>& shape = file.entry(name).shape;
    DB_REQUIRE(shape == spec.shape, file.path() + ": " + name + " has shape " + shape_text(shape) +
                                        ", config.json implies " + shape_text(spec.shape));
    const std::vector<float> values = file.read_float(name);
    std::copy(values.begin(), values.end(), c.params.begin() + spec.offset);
    used.insert(name);
  }
  // A tied checkpoint may still store the head; it must then be the embedding.
  if (c.model.tie_embeddings && files.count("lm_head.weight")) {
    const ParameterSpec& embed = layout.spec(layout.id("embed"));
    const std::vector<float> head = file_of("lm_head.weight").read_float("lm_head.weight");
    DB_REQUIRE(std::equal(head.begin(), head.end(), c.params.begin() + embed.offset,
                          c.params.begin() + embed.offset + embed.size()),
               dir + ": tie_word_embeddings is true but lm_head.weight differs from the embedding");
    used.insert("lm_head.weight");
  }
  for (const auto& [name, file] : files)
    DB_REQUIRE(used.count(name) || derived_buffer(name),
               dir + ": tensor " + name +
                   " has no place in a LLaMA-layout model (biases, experts or another design?)");
  return c;
}

void write_hf_checkpoint(const std::string& dir, const Checkpoint& weights, int64_t eos_id,
                         const std::string& modeling_dir) {
  const ModelConfig& m = weights.model;
  const bool llama = m.arch == "pre_ln";  // the only design transformers implements itself
  DB_REQUIRE(weights.seq_len > 0,
             "the weights record no training seq_len for "
             "max_position_embeddings");
  if (!llama)
    for (const char* file : kHfModelingFiles)
      DB_REQUIRE(fs::exists(fs::path(modeling_dir) / file),
                 "design " + m.arch + " exports with its modelling code, but " + file +
                     " was not found in '" + modeling_dir + "'");
  fs::create_directories(dir);
  const ParameterLayout layout = build_layout(m);
  DB_REQUIRE(int64_t(weights.params.size()) == layout.storage_size(),
             "weights do not match the model's parameter layout");
  std::vector<TensorView> tensors;
  for (const ParameterSpec& spec : layout.specs())
    tensors.push_back({llama ? hf_name(spec.name) : "model." + spec.name, spec.shape,
                       weights.params.data() + spec.offset});
  // transformers refuses a safetensors file whose metadata does not name its framework.
  write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  std::ofstream out(dir + "/config.json");
  out << (llama ? config_json(weights, eos_id) : depthbench_config_json(weights, eos_id));
  DB_REQUIRE(out.flush(), "cannot write " + dir + "/config.json");
  if (!llama)
    for (const char* file : kHfModelingFiles)
      fs::copy_file(fs::path(modeling_dir) / file, fs::path(dir) / file,
                    fs::copy_options::overwrite_existing);
}

}  // namespace db
