#include "io/safetensors_weights.hpp"

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "io/model_fields.hpp"
#include "io/safetensors.hpp"
#include "model/model.hpp"
#include "util/json.hpp"

namespace db {
namespace {

namespace fs = std::filesystem;

void write_config_json(const std::string& path, const Checkpoint& weights) {
  std::string json = "{\n  \"format\": " + json_quote(kSafetensorsWeightsFormat) +
                     ",\n  \"run_id\": " + json_quote(weights.run_id) +
                     ",\n  \"seq_len\": " + std::to_string(weights.seq_len);
  for (const auto& [key, value] : model_json_members(weights.model))
    json += ",\n  " + json_quote(key) + ": " + value;
  std::ofstream out(path);
  out << json << "\n}\n";
  DB_REQUIRE(out.flush(), "cannot write " + path);
}

}  // namespace

void write_safetensors_weights(const std::string& out_dir, const Checkpoint& weights) {
  fs::create_directories(out_dir);
  const ParameterLayout layout = build_layout(weights.model);
  DB_REQUIRE(int64_t(weights.params.size()) == layout.storage_size(),
             "weights do not match the model's parameter layout");
  std::vector<TensorView> tensors;
  for (const ParameterSpec& spec : layout.specs())
    tensors.push_back({spec.name, spec.shape, weights.params.data() + spec.offset});
  std::map<std::string, std::string> metadata = {{"format", kSafetensorsWeightsFormat},
                                                 {"run_id", weights.run_id},
                                                 {"seq_len", std::to_string(weights.seq_len)}};
  for (const ModelField& field : model_fields(weights.model))
    metadata[field.key] = field_text(field.value);
  write_safetensors(out_dir + "/model.safetensors", tensors, metadata);
  write_config_json(out_dir + "/config.json", weights);
}

Checkpoint read_safetensors_weights(const std::string& path) {
  const std::string file = fs::is_directory(path) ? path + "/model.safetensors" : path;
  const SafetensorsFile st(file);
  const auto& meta = st.metadata();
  const auto format = meta.find("format");
  DB_REQUIRE(format != meta.end() && format->second == kSafetensorsWeightsFormat,
             file + " is not a DepthBench export (no __metadata__ format = " +
                 kSafetensorsWeightsFormat + "); a Hugging Face folder is read with --hf");
  Checkpoint c;
  c.model = model_from_fields(
      [&](const std::string& key, const FieldValue& kind) -> std::optional<FieldValue> {
        const auto it = meta.find(key);
        if (it == meta.end()) return std::nullopt;
        return parse_field(it->second, kind, file + ": " + key);
      },
      file);
  c.run_id = meta.count("run_id") ? meta.at("run_id") : "";
  if (meta.count("seq_len"))
    c.seq_len = std::get<int64_t>(parse_field(meta.at("seq_len"), int64_t(0), file + ": seq_len"));
  const ParameterLayout layout = build_layout(c.model);
  c.params.resize(layout.storage_size());
  for (const ParameterSpec& spec : layout.specs()) {
    const SafetensorsFile::Entry& e = st.entry(spec.name);
    DB_REQUIRE(e.dtype == "F32" && e.shape == spec.shape,
               file + ": " + spec.name + " is " + e.dtype + " " + shape_text(e.shape) +
                   ", the model expects F32 " + shape_text(spec.shape));
    const std::vector<float> values = st.read_float(spec.name);
    std::copy(values.begin(), values.end(), c.params.begin() + spec.offset);
  }
  DB_REQUIRE(st.tensors().size() == layout.specs().size(),
             file + " holds " + std::to_string(st.tensors().size()) + " tensors, the model has " +
                 std::to_string(layout.specs().size()));
  return c;
}

}  // namespace db
