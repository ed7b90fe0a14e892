// Exports read back bit for bit: every registered design through `--format safetensors`, Pre-LN
// (with GQA, QK-norm, tied embeddings) through the Hugging Face layout; every other design
// exports to a Hugging Face folder with its modelling code, its tensors by name and a typed
// config.json, and reads back from it bit for bit; the safetensors reader converts F16/BF16/F64
// exactly and refuses bad files.
#define BOOST_TEST_MODULE export_roundtrip
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/model_fields.hpp"
#include "io/safetensors.hpp"
#include "io/safetensors_weights.hpp"
#include "io/weights_source.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "util/json.hpp"
#include "util/text_file.hpp"

using namespace db;

namespace {

const std::string kWork = std::string(DEPTHBENCH_BINARY_DIR) + "/test-work/export_roundtrip";

Checkpoint random_weights(const ModelConfig& config, uint64_t seed) {
  Model<float> model(config);
  model.initialize(seed);
  Checkpoint c;
  c.model = config;
  c.run_id = "roundtrip-" + config.arch;
  c.seq_len = 24;
  // Structured inits (ones, one-hot routing) would hide a mix-up of equal-shaped tensors. The
  // padding between parameters stays zero, as files do not hold it.
  auto values = model.params().values();
  for (const ParameterSpec& s : model.layout().specs())
    for (int64_t i = s.offset; i < s.offset + s.size(); ++i) values[i] += float(i % 97) * 1e-3f;
  c.params.assign(values.begin(), values.end());
  return c;
}

ModelConfig tiny(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 3;
  c.d_model = 16;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.vocab_size = 19;
  return c;
}

void same_model(const ModelConfig& a, const ModelConfig& b) {
  BOOST_TEST(a.arch == b.arch);
  BOOST_TEST(design_options_text(a) == design_options_text(b));
  BOOST_TEST(a.n_layer == b.n_layer);
  BOOST_TEST(a.d_model == b.d_model);
  BOOST_TEST(a.n_head == b.n_head);
  BOOST_TEST(a.kv_heads() == b.kv_heads());
  BOOST_TEST(a.head_dim() == b.head_dim());
  BOOST_TEST(a.ff_dim() == b.ff_dim());
  BOOST_TEST(a.vocab_size == b.vocab_size);
  BOOST_TEST(a.qk_norm == b.qk_norm);
  BOOST_TEST(a.tie_embeddings == b.tie_embeddings);
  BOOST_TEST(a.rope_theta == b.rope_theta);
  BOOST_TEST(a.norm_eps == b.norm_eps);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void write_bytes(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

}  // namespace

BOOST_AUTO_TEST_CASE(safetensors_export_round_trips_every_design_bit_for_bit) {
  for (const DesignInfo& design : all_designs()) {
    ModelConfig config = tiny(design.name);
    config.rope_theta = 31415.0;
    config.norm_eps = 1e-5;
    const Checkpoint written = random_weights(config, 7);
    const std::string dir = kWork + "/" + design.name;
    write_safetensors_weights(dir, written);
    for (const std::string& path : {dir, dir + "/model.safetensors"}) {
      const Checkpoint read = load_weights(path);
      BOOST_TEST_CONTEXT(design.name << " from " << path) {
        same_model(read.model, written.model);
        BOOST_TEST(read.seq_len == written.seq_len);
        BOOST_TEST(read.run_id == written.run_id);
        BOOST_TEST(bitwise_equal(read.params, written.params));
      }
    }
    // Every tensor under its own name, as doc/parameters.md lists them.
    const SafetensorsFile file(dir + "/model.safetensors");
    const ParameterLayout layout = build_layout(config);
    for (const ParameterSpec& spec : layout.specs())
      BOOST_TEST(file.entry(spec.name).shape == spec.shape, design.name << " " << spec.name);
  }
}

BOOST_AUTO_TEST_CASE(hf_export_of_pre_ln_round_trips_bit_for_bit) {
  for (const bool qk_norm : {false, true})
    for (const bool tied : {false, true}) {
      ModelConfig config = tiny("pre_ln");
      config.qk_norm = qk_norm;
      config.tie_embeddings = tied;
      config.rope_theta = 500000.0;
      const Checkpoint written = random_weights(config, 3);
      const std::string dir = kWork + "/hf_" + std::to_string(qk_norm) + std::to_string(tied);
      write_hf_checkpoint(dir, written, 2);
      const Checkpoint read = read_hf_checkpoint(dir);
      BOOST_TEST_CONTEXT("qk_norm " << qk_norm << ", tied " << tied) {
        same_model(read.model, written.model);
        BOOST_TEST(read.seq_len == written.seq_len);
        BOOST_TEST(bitwise_equal(read.params, written.params));
      }
    }
}

BOOST_AUTO_TEST_CASE(hf_export_of_other_designs_ships_modelling_code_and_our_tensors) {
  const std::string modeling = std::string(DEPTHBENCH_SOURCE_DIR) + "/src/io/hf_modeling";
  for (const DesignInfo& design : all_designs()) {
    if (design.name == "pre_ln") continue;
    const Checkpoint weights = random_weights(tiny(design.name), 1);
    const std::string dir = kWork + "/hf_" + design.name;
    write_hf_checkpoint(dir, weights, 5, modeling);
    BOOST_TEST_CONTEXT(design.name) {
      for (const char* file : kHfModelingFiles)
        BOOST_TEST(std::filesystem::exists(dir + "/" + file), file);
      // Our names below `model.` (the wrapper holds the model as `self.model`), values as stored.
      const SafetensorsFile file(dir + "/model.safetensors");
      const ParameterLayout layout = build_layout(weights.model);
      BOOST_TEST(file.tensors().size() == layout.specs().size());
      for (const ParameterSpec& spec : layout.specs()) {
        BOOST_TEST(file.entry("model." + spec.name).shape == spec.shape, spec.name);
        const std::vector<float> values = file.read_float("model." + spec.name);
        BOOST_TEST(std::memcmp(values.data(), weights.params.data() + spec.offset,
                               values.size() * sizeof(float)) == 0,
                   spec.name);
      }
      const JsonValue config = parse_json(read_text_file(dir + "/config.json"));
      BOOST_TEST(config.find("model_type")->as_string() == "depthbench");
      BOOST_TEST(config.find("arch")->as_string() == design.name);
      BOOST_TEST(config.find("auto_map")->find("AutoModelForCausalLM")->as_string() ==
                 "modeling_depthbench.DepthBenchForCausalLM");
      BOOST_TEST(config.find("qk_norm")->is_bool());
      BOOST_TEST(config.find("n_kv_head")->as_number() == 2);
      BOOST_TEST(config.find("max_position_embeddings")->as_number() == 24);
      BOOST_TEST(config.find("eos_token_id")->as_number() == 5);
      BOOST_TEST(config.find("design_options")->as_object().size() == design.options.size());
      // `eval --hf` and `diagnose --hf` read it back as the same design, bit for bit (option
      // values compare as their JSON: 1e-6 comes back as 1e-06).
      const Checkpoint read = read_hf_checkpoint(dir);
      BOOST_TEST(read.model.arch == design.name);
      BOOST_TEST(model_json_members(read.model) == model_json_members(weights.model));
      BOOST_TEST(read.seq_len == weights.seq_len);
      BOOST_TEST(bitwise_equal(read.params, weights.params));
    }
  }
  // Without the modelling code there is nothing to load the folder with: refused by name.
  BOOST_CHECK_EXCEPTION(
      write_hf_checkpoint(kWork + "/refused", random_weights(tiny("hc"), 1), -1, kWork), Error,
      [](const Error& e) {
        return std::string(e.what()).find("modeling_depthbench.py") != std::string::npos ||
               std::string(e.what()).find("depthbench_model.py") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(config_json_design_options_are_typed) {
  ModelConfig config = tiny("mhc");
  config.design_options["mhc_identity_init"] = "true";
  auto options = [](const ModelConfig& c) {
    for (const auto& [key, json] : model_json_members(c))
      if (key == "design_options") return json;
    return std::string();
  };
  BOOST_TEST(options(config) ==
             R"({"mhc_streams": 4, "mhc_sinkhorn_iters": 20, "mhc_sinkhorn_eps": 1e-06, )"
             R"("mhc_identity_init": true})");
  BOOST_TEST(
      options(tiny("deepnorm")) ==
      R"({"deepnorm_alpha": "auto", "deepnorm_beta": "auto", "deepnorm_norm": "layernorm"})");
  BOOST_TEST(options(tiny("attnres_block")) ==
             R"({"attnres_blocks": 8, "attnres_block_size": null})");
  BOOST_TEST(options(tiny("pre_ln")) == "{}");
  for (const auto& [key, json] : model_json_members(tiny("hc")))
    if (key == "qk_norm" || key == "tie_embeddings") BOOST_TEST(json == "false");
}

BOOST_AUTO_TEST_CASE(half_precision_tensors_convert_exactly) {
  std::filesystem::create_directories(kWork);
  // F16: 1, −2, the smallest subnormal 2⁻²⁴, +inf; BF16: 1, −0.5; F64: 0.1.
  const uint16_t f16[] = {0x3c00, 0xc000, 0x0001, 0x7c00};
  const uint16_t bf16[] = {0x3f80, 0xbf00};
  const double f64[] = {0.1};
  std::string data(reinterpret_cast<const char*>(f16), sizeof f16);
  data.append(reinterpret_cast<const char*>(bf16), sizeof bf16);
  data.append(reinterpret_cast<const char*>(f64), sizeof f64);
  const std::string path = kWork + "/half.safetensors";
  write_bytes(path,
              R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
              R"("d":{"dtype":"F64","shape":[1],"data_offsets":[12,20]}})",
              data);
  const SafetensorsFile file(path);
  const std::vector<float> h = file.read_float("h"), b = file.read_float("b");
  BOOST_TEST(h[0] == 1.0f);
  BOOST_TEST(h[1] == -2.0f);
  BOOST_TEST(h[2] == std::ldexp(1.0f, -24));
  BOOST_TEST(std::isinf(h[3]));
  BOOST_TEST(b[0] == 1.0f);
  BOOST_TEST(b[1] == -0.5f);
  BOOST_TEST(file.read_float("d")[0] == 0.1f);
}

BOOST_AUTO_TEST_CASE(malformed_safetensors_files_are_refused_with_one_line) {
  std::filesystem::create_directories(kWork);
  auto message = [](const std::string& path) -> std::string {
    try {
      SafetensorsFile file(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const std::string short_data = kWork + "/short.safetensors";
  write_bytes(short_data, R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "abcd");
  BOOST_TEST(message(short_data).find("outside the file") != std::string::npos);
  const std::string wrong_size = kWork + "/size.safetensors";
  write_bytes(wrong_size, R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,4]}})", "abcd");
  BOOST_TEST(message(wrong_size).find("do not hold") != std::string::npos);
  const std::string not_json = kWork + "/json.safetensors";
  write_bytes(not_json, "{nope", "");
  BOOST_TEST(message(not_json).find("not JSON") != std::string::npos);
  BOOST_TEST(message(kWork + "/missing.safetensors").find("not found") != std::string::npos);
}
