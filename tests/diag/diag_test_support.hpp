// Helpers of the diagnostics tests: MPI for the process, a temporary folder, a tiny model with
// hand-set blocks, sampled windows from a token file, and one diagnostic run in-process.
#pragma once
#include <mpi.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/token_writer.hpp"
#include "diag/diagnostics.hpp"
#include "ops/cpu/gemm.hpp"

namespace db::diag::test {

struct MpiFixture {
  MpiFixture() {
    int argc = 0;
    char** argv = nullptr;
    MPI_Init(&argc, &argv);
    cpu::set_cpu_threads(1);
  }
  ~MpiFixture() { MPI_Finalize(); }
};

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "depthbench_diag_XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

inline ModelConfig tiny_config(const std::string& arch = "pre_ln", int n_layer = 4) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = n_layer;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 257;
  return c;
}

inline void fill_parameter(Model<float>& model, const std::string& name, float value) {
  const int id = model.layout().id(name);
  float* v = model.params().value(id);
  std::fill(v, v + model.layout().spec(id).size(), value);
}

// Block b becomes the identity: zero output projections of attention and FFN.
inline void make_identity_block(Model<float>& model, int b) {
  fill_parameter(model, "blocks." + std::to_string(b) + ".wo", 0.0f);
  fill_parameter(model, "blocks." + std::to_string(b) + ".w2", 0.0f);
}

inline void copy_block(Model<float>& model, int from, int to) {
  for (const ParameterSpec& spec : model.layout().specs()) {
    const std::string prefix = "blocks." + std::to_string(from) + ".";
    if (spec.name.rfind(prefix, 0) != 0) continue;
    const std::string suffix = spec.name.substr(prefix.size());
    const float* src = model.params().value(model.layout().id(spec.name));
    float* dst =
        model.params().value(model.layout().id("blocks." + std::to_string(to) + "." + suffix));
    std::copy(src, src + spec.size(), dst);
  }
}

// A token file of random byte ids.
inline std::string random_tokens(const TempDir& dir, int64_t count, uint64_t seed = 7) {
  Rng rng(seed);
  std::vector<uint32_t> ids(count);
  for (uint32_t& id : ids) id = uint32_t(rng.below(256));
  const std::string path = dir.file("tokens.npy");
  data::write_npy(path, ids, 2);
  return path;
}

// Runs one diagnostic in-process on COMM_SELF and returns its datasets by name.
struct Harness {
  Model<float> model;
  RunConfig run;
  DiagSettings settings;
  Communicator comm = Communicator::self();
  std::unique_ptr<WindowSample> windows;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer = tokenizer::load_tokenizer("bytes");
  Progress progress{comm, false};

  Harness(const ModelConfig& config, const std::string& token_file, int window_len = 16)
      : model(config) {
    model.initialize(3);
    run.model = config;
    run.recipe.seq_len = window_len;
    settings.window_len = window_len;
    settings.angular_windows = settings.causal_windows = settings.permutation_windows = 6;
    settings.path_windows = settings.pruning_windows = settings.logitlens_windows = 6;
    settings.bootstrap = 50;
    data::TokenFileOptions options;
    options.vocab_size = config.vocab_size;
    windows = std::make_unique<WindowSample>(std::vector<std::string>{token_file}, window_len,
                                             options, settings.seed);
  }

  std::map<std::string, DiagnosticDataset> run_diagnostic(const std::string& name) {
    DiagContext ctx{model, run, settings, comm, *windows, tokenizer.get(), progress};
    for (const Diagnostic& d : all_diagnostics())
      if (d.name == name) {
        std::map<std::string, DiagnosticDataset> out;
        for (DiagnosticDataset& set : d.run(ctx)) out[set.name] = set;
        return out;
      }
    throw Error("no diagnostic " + name);
  }
};

}  // namespace db::diag::test
