// `depthbench export RUN --format safetensors|hf` (doc/export.md): a run's weights for tools
// outside DepthBench — every design's tensors by name in safetensors, or a Hugging Face folder
// (a Pre-LN run as LLaMA, any other design with its modelling code) with the tokenizer the
// run's data was tokenized with.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "app/installed_files.hpp"
#include "core/error.hpp"
#include "data/shard_manifest.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_library.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/run_file.hpp"
#include "io/safetensors_weights.hpp"
#include "io/stored_paths.hpp"
#include "io/weights_source.hpp"
#include "model/model.hpp"
#include "util/json_writer.hpp"
#include "util/text_file.hpp"

namespace db::app {
namespace {

namespace fs = std::filesystem;

// NAME.h5, NAME.weights, NAME.init.weights, NAME.ckpt → NAME.
std::string run_stem(const std::string& path) {
  for (const char* suffix : {".h5", ".init.weights", ".weights", ".ckpt"}) {
    const std::string s = suffix;
    if (path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0)
      return path.substr(0, path.size() - s.size());
  }
  return path;
}

// The manifest of the run's token files (doc/tokenize.md), when NAME.h5 and the files are found.
// The run file stores its token file patterns absolute (io/stored_paths.hpp), so this works from
// any directory; a missing data folder only costs the tokenizer, never the export.
std::optional<data::ShardManifest> run_manifest(const std::string& run_file) {
  if (!fs::exists(run_file)) return std::nullopt;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t id = H5Fopen(run_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) return std::nullopt;
  H5Handle file(id, close_hdf5_file);
  for (const char* attribute : {"train_files", "val_files"}) {
    if (H5Aexists(file.get(), attribute) <= 0) continue;
    std::vector<std::string> patterns;
    std::istringstream list(read_string_attribute(file.get(), attribute));
    for (std::string pattern; std::getline(list, pattern, ';');)
      if (!pattern.empty()) patterns.push_back(pattern);
    for (const std::string& token_file : expand_stored_globs(patterns, run_file))
      if (auto manifest = data::manifest_describing(token_file)) return manifest;
  }
  return std::nullopt;
}

void ship_file(const fs::path& from, const fs::path& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  std::printf("  %s (from %s)\n", to.filename().c_str(), from.c_str());
}

// tokenizer_config.json says how long an input the model takes (model_max_length): the
// model's context, max_position_embeddings = the training seq_len, not what the tokenizer's
// authors wrote for their own model.
void write_tokenizer_config(const fs::path& from, const fs::path& to, int64_t context) {
  JsonObject config;
  if (!from.empty()) {
    try {
      config = parse_json(read_text_file(from.string())).as_object("tokenizer_config.json");
    } catch (const Error& e) {
      throw Error(from.string() + ": " + e.what());
    }
  }
  // Without a class AutoTokenizer picks one from model_type (LLaMA's adds a BOS token, ours has
  // none); the generic fast tokenizer encodes exactly as tokenizer.json says, as `tokenize` did.
  if (!config.count("tokenizer_class"))
    config["tokenizer_class"] = JsonValue(std::string("PreTrainedTokenizerFast"));
  config["model_max_length"] = JsonValue(double(context));
  std::ofstream out(to);
  out << json_text(JsonValue(std::move(config))) << "\n";
  DB_REQUIRE(out.flush(), "cannot write " + to.string());
  std::printf("  %s (%s, model_max_length %lld)\n", to.filename().c_str(),
              from.empty() ? "written" : ("from " + from.string()).c_str(), (long long)context);
}

// The tokenizer files in the layout transformers reads: tokenizer.json with its companions, or
// GPT-2's encoder.json + vocab.bpe as vocab.json + merges.txt. Returns what is missing, if any.
std::string copy_tokenizer(const std::string& spec, const fs::path& out, int64_t context) {
  if (spec.empty()) return "the run's token files or their manifest.ini were not found";
  if (spec == "bytes") return "the run used the bytes tokenizer, which has no Hugging Face form";
  fs::path source = spec;
  if (fs::is_directory(source))
    source /= fs::exists(source / "tokenizer.json") ? "tokenizer.json" : "encoder.json";
  if (!fs::exists(source)) return "tokenizer " + spec + " not found";
  if (source.filename() == "encoder.json") {
    ship_file(source, out / "vocab.json");
    ship_file(source.parent_path() / "vocab.bpe", out / "merges.txt");
    return "";
  }
  ship_file(source, out / "tokenizer.json");
  if (fs::exists(source.parent_path() / "special_tokens_map.json"))
    ship_file(source.parent_path() / "special_tokens_map.json", out / "special_tokens_map.json");
  const fs::path config = source.parent_path() / "tokenizer_config.json";
  write_tokenizer_config(fs::exists(config) ? config : fs::path(), out / "tokenizer_config.json",
                         context);
  return "";
}

}  // namespace

int run_export_command(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string run, format, out, tokenizer;
  po::options_description described(
      "usage: depthbench export RUN --format safetensors|hf [--out DIR]\n\n"
      "RUN is a run file NAME.h5 (its final weights NAME.weights are exported) or a weight file\n"
      "(NAME.weights, NAME.init.weights, NAME.ckpt). safetensors: every tensor of any design by\n"
      "name plus config.json. hf: a Hugging Face folder (config.json, model.safetensors, the\n"
      "tokenizer files of the run's data): a Pre-LN run as LLaMA, any other design with its\n"
      "modelling code for AutoModelForCausalLM (trust_remote_code=True).\n\noptions");
  described.add_options()("help,h", "print this help")("run", po::value(&run)->required(),
                                                       "the run file or weight file (positional)")(
      "format", po::value(&format)->required(), "safetensors | hf")(
      "out", po::value(&out), "output folder (default: NAME-safetensors or NAME-hf beside RUN)")(
      "tokenizer", po::value(&tokenizer),
      "hf: tokenizer.json (or its folder) to ship (default: the one named by the manifest.ini "
      "of the run's token files)");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map vm;
  if (const auto stop = parse_command_line("export", argc, argv, described, vm, &positional))
    return *stop;
  DB_REQUIRE(format == "safetensors" || format == "hf",
             "--format = " + format + ": must be safetensors or hf");
  const std::string stem = run_stem(run);
  const std::string weights_file = run == stem + ".h5" ? stem + ".weights" : run;
  if (out.empty()) out = stem + "-" + format;
  const Checkpoint weights = load_weights(weights_file);

  if (format == "safetensors") {
    write_safetensors_weights(out, weights);
    // The values of the tensors written, not of the padded layout the weights are stored in.
    const ParameterLayout layout = build_layout(weights.model);
    int64_t values = 0;
    for (const ParameterSpec& spec : layout.specs()) values += spec.size();
    std::printf("exported %s (%s, %lld values) to %s/model.safetensors and config.json\n",
                weights_file.c_str(), weights.model.arch.c_str(), static_cast<long long>(values),
                out.c_str());
    return 0;
  }
  const std::optional<data::ShardManifest> manifest = run_manifest(stem + ".h5");
  const bool llama = weights.model.arch == "pre_ln";
  write_hf_checkpoint(out, weights, manifest ? manifest->eod_id : -1,
                      llama ? "" : locate_hf_modeling());
  if (llama)
    std::printf("exported %s as a Hugging Face %s folder %s\n", weights_file.c_str(),
                weights.model.qk_norm ? "Qwen3" : "LLaMA", out.c_str());
  else
    std::printf(
        "exported %s (%s) as a Hugging Face folder %s with its modelling code: load it with "
        "AutoModelForCausalLM.from_pretrained(..., trust_remote_code=True)\n",
        weights_file.c_str(), weights.model.arch.c_str(), out.c_str());
  const std::string spec =
      tokenizer.empty() && manifest ? data::tokenizer_location(*manifest) : tokenizer;
  const std::string missing = copy_tokenizer(spec, out, weights.seq_len);
  // The weights are out either way; a tokenizer that was not found can be added afterwards.
  if (!missing.empty()) std::printf("  no tokenizer files written: %s\n", missing.c_str());
  if (!missing.empty() && spec != "bytes")
    std::printf(
        "  the weights are exported; to add the tokenizer, run the same command with "
        "--tokenizer PATH/tokenizer.json (or its folder), or copy tokenizer.json into "
        "%s\n",
        out.c_str());
  return 0;
}

}  // namespace db::app
