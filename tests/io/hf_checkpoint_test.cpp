// Hugging Face LLaMA-family folders written by an independent PyTorch script
// (tests/io/hf_llama_reference.py: random weights, a hand-written safetensors writer) load and
// give that model's logits — GQA, tied embeddings, Qwen3 QK-norm with its own head_dim, bf16 and
// fp16 files, a sharded index — and configs with unsupported fields are refused by name.
#define BOOST_TEST_MODULE hf_checkpoint
#define BOOST_TEST_DYN_LINK
#include "io/hf_checkpoint.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "model/model.hpp"
#include "support/h5_tensors.hpp"

using namespace db;

namespace {

const std::string kWork = std::string(DEPTHBENCH_BINARY_DIR) + "/test-work/hf_checkpoint";

// The script's folders, made once for every test case of this executable.
const std::string& checkpoints() {
  static const bool made = [] {
    std::filesystem::remove_all(kWork);
    std::filesystem::create_directories(kWork);
    const std::string command = std::string(DEPTHBENCH_PYTHON) + " " + DEPTHBENCH_SOURCE_DIR +
                                "/tests/io/hf_llama_reference.py make " + kWork + " > " + kWork +
                                "/make.log 2>&1";
    return std::system(command.c_str()) == 0;
  }();
  BOOST_REQUIRE_MESSAGE(made, "hf_llama_reference.py failed: see " + kWork + "/make.log");
  return kWork;
}

double max_relative_difference(const std::vector<float>& ours, const std::vector<double>& ref) {
  double scale = 1e-30, worst = 0;
  for (double v : ref) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::fabs(ours[i] - ref[i]));
  return worst / scale;
}

// Our logits of the case's tokens against the PyTorch model's, max |Δ| / max |logit|.
double logit_difference(const std::string& name) {
  const Checkpoint c = read_hf_checkpoint(checkpoints() + "/" + name);
  Model<float> model(c.model);
  std::copy(c.params.begin(), c.params.end(), model.params().values().begin());
  H5Handle ref = test::open_h5(checkpoints() + "/reference.h5");
  const std::vector<double> tokens_in = test::read_tensor(ref.get(), name + "/tokens");
  const std::vector<double> expected = test::read_tensor(ref.get(), name + "/logits");
  const std::vector<int32_t> tokens(tokens_in.begin(), tokens_in.end());
  std::vector<float> logits;
  model.logits(tokens.data(), 2, int(tokens.size() / 2), logits);
  BOOST_REQUIRE_EQUAL(logits.size(), expected.size());
  const double diff = max_relative_difference(logits, expected);
  BOOST_TEST_MESSAGE(name << ": max relative logit difference " << diff);
  return diff;
}

std::string refusal(const std::string& name) {
  try {
    read_hf_checkpoint(checkpoints() + "/refused_" + name);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(gqa_checkpoint_gives_the_pytorch_logits) {
  BOOST_TEST(logit_difference("gqa") <= 1e-5);
  const Checkpoint c = read_hf_checkpoint(checkpoints() + "/gqa");
  BOOST_TEST(c.model.kv_heads() == 2);
  BOOST_TEST(c.model.rope_theta == 500000.0);
  BOOST_TEST(c.model.norm_eps == 1e-5);
  BOOST_TEST(c.seq_len == 16);  // max_position_embeddings
}

BOOST_AUTO_TEST_CASE(tied_checkpoint_uses_the_embedding_as_head) {
  BOOST_TEST(logit_difference("tied") <= 1e-5);
  const Checkpoint c = read_hf_checkpoint(checkpoints() + "/tied");
  BOOST_TEST(c.model.tie_embeddings);
  BOOST_TEST(!build_layout(c.model).has("lm_head"));
}

BOOST_AUTO_TEST_CASE(qwen3_checkpoint_with_qk_norm_and_own_head_dim_gives_the_pytorch_logits) {
  BOOST_TEST(logit_difference("qwen3") <= 1e-5);
  const Checkpoint c = read_hf_checkpoint(checkpoints() + "/qwen3");
  BOOST_TEST(c.model.qk_norm);
  BOOST_TEST(c.model.head_dim() == 16);  // d = 32 with 4 heads would give 8
}

BOOST_AUTO_TEST_CASE(bf16_and_fp16_files_are_read_as_float) {
  BOOST_TEST(logit_difference("bf16") <= 1e-5);
  BOOST_TEST(logit_difference("fp16") <= 1e-5);
}

BOOST_AUTO_TEST_CASE(sharded_index_loads_the_same_weights) {
  const Checkpoint sharded = read_hf_checkpoint(checkpoints() + "/sharded");
  const Checkpoint single = read_hf_checkpoint(checkpoints() + "/gqa");
  BOOST_TEST(sharded.params == single.params);  // the script stored the same tensors in 3 shards
}

BOOST_AUTO_TEST_CASE(unsupported_config_fields_are_refused_by_name) {
  const std::pair<const char*, const char*> cases[] = {
      {"attention_bias", "attention_bias"}, {"rope_scaling", "rope_scaling"},
      {"hidden_act", "hidden_act"},         {"sliding_window", "sliding_window"},
      {"moe", "num_local_experts"},         {"unknown", "partial_rotary_factor"}};
  for (const auto& [folder, field] : cases)
    BOOST_TEST(refusal(folder).find(field) != std::string::npos, field << ": " << refusal(folder));
  BOOST_TEST(refusal("moe").find("mixture of experts") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(missing_folder_and_tensor_are_one_line_errors) {
  BOOST_CHECK_EXCEPTION(read_hf_checkpoint(checkpoints() + "/nope"), Error, [](const Error& e) {
    return std::string(e.what()).find("not found") != std::string::npos;
  });
  const std::string broken = checkpoints() + "/broken";
  std::filesystem::create_directories(broken);
  std::filesystem::copy_file(checkpoints() + "/tied/config.json", broken + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  BOOST_CHECK_EXCEPTION(read_hf_checkpoint(broken), Error, [](const Error& e) {
    return std::string(e.what()).find("model.safetensors") != std::string::npos;
  });
}
