// train.activation_dtype = bf16 against the independent PyTorch reference's emulation of it
// (depthbench_reference.py --activation-dtype bf16, written from doc/performance.md's definition:
// the attention and FFN cores store bf16 and compute in fp32, everything around them is fp32).
// Same weights and batch → the same loss and the same whole gradient up to fp32 results that
// differ in their last bits and round to neighbouring bf16 values; and clearly farther from the
// reference's fp32 mode, so that the tolerance could not pass a model that rounds nothing (or
// rounds somewhere else). Every design but MoDA, whose depth gradients the emulation leaves out
// (tests/reference/README.md).
#define BOOST_TEST_MODULE pytorch_bf16_storage
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "ops/cpu/gemm.hpp"
#include "support/h5_tensors.hpp"
#include "support/reference_config.hpp"

using namespace db;

namespace {

const std::string kScript =
    std::string(DEPTHBENCH_SOURCE_DIR) + "/tests/reference/depthbench_reference.py";
constexpr int kBatch = 2, kSeq = 9;
// Agreement with the emulation: what flips of single bf16 roundings leave (measured ≤ 1e-4).
constexpr double kGradientTolerance = 1e-3, kLossTolerance = 1e-5;

struct Case {
  std::string arch;
  bool gqa_qk_norm;  // n_kv_head = n_head / 2 and QK-norm
  std::string name() const { return arch + (gqa_qk_norm ? " gqa+qk_norm" : ""); }
};

// pre_ln both ways (the cores' two attention paths); every other design the emulation covers
// with GQA and QK-norm.
std::vector<Case> cases() {
  std::vector<Case> v = {{"pre_ln", false}, {"pre_ln", true}};
  for (const DesignInfo& d : all_designs())
    if (d.name != "pre_ln" && d.name != "moda") v.push_back({d.name, true});
  return v;
}

// d = 64 with 3 blocks: products long enough that bf16 storage moves the gradient by ≈ 1e-2,
// an order of magnitude above the tolerance.
ModelConfig config_of(const Case& k) {
  ModelConfig c;
  c.arch = k.arch;
  c.n_layer = 3;
  c.d_model = 64;
  c.n_head = 4;
  c.n_kv_head = k.gqa_qk_norm ? 2 : 4;
  c.qk_norm = k.gqa_qk_norm;
  c.vocab_size = 37;
  if (k.arch == "attnres_block") c.design_options = {{"attnres_block_size", "2"}};  // 2L = 6
  return c;
}

OpsOptions storing(ActivationDtype dtype) {
  OpsOptions o;
  o.activation_dtype = dtype;
  return o;
}

struct Result {
  double loss;
  std::vector<double> grads;  // every parameter's, one after the other in layout order
};

// Weights moved off their init (zero-initialised mixers carry gradients), as float values.
std::vector<float> jittered_weights(const ModelConfig& c) {
  Model<float> model(c);
  model.initialize(5);
  std::vector<float> values = model.params().values_to_host();
  Rng jitter(17);
  for (float& v : values) v += float(0.05 * jitter.normal());
  return values;
}

std::vector<int32_t> batch_tokens(const ModelConfig& c) {
  std::vector<int32_t> tokens(kBatch * kSeq);
  Rng rng(9);
  for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
  return tokens;
}

Result ours(const ModelConfig& c, ActivationDtype dtype, const std::vector<float>& weights,
            const std::vector<int32_t>& tokens) {
  Model<float> model(c, find_backend("cpu"), storing(dtype));
  model.params().copy_values_from_host(weights);
  model.params().zero_grads();
  const double scale = 1.0 / (kBatch * (kSeq - 1));
  Result r;
  r.loss = model.forward_backward(tokens.data(), kBatch, kSeq, scale) * scale;
  const std::vector<float> grads = model.params().grad_buffer().to_host();
  for (const ParameterSpec& s : model.layout().specs())  // without the alignment padding
    r.grads.insert(r.grads.end(), grads.begin() + s.offset, grads.begin() + s.offset + s.size());
  return r;
}

void write_weights(const std::string& path, const ModelConfig& c, const ParameterLayout& layout,
                   const std::vector<float>& weights, const std::vector<int32_t>& tokens) {
  H5Handle f = test::create_h5(path);
  test::write_string_attribute(f.get(), "config", test::reference_config_json(c));
  for (const ParameterSpec& s : layout.specs()) {
    std::vector<hsize_t> shape(s.shape.begin(), s.shape.end());
    const std::vector<double> values(weights.begin() + s.offset,
                                     weights.begin() + s.offset + s.size());
    test::write_tensor(f.get(), s.name, shape, values.data());
  }
  std::vector<int64_t> t(tokens.begin(), tokens.end());
  test::write_tensor(f.get(), "tokens", {kBatch, kSeq}, t.data());
}

// One reference process for all the cases (importing torch takes seconds): IN_i → OUT_i.
void run_reference(const std::vector<std::string>& in, const std::vector<std::string>& out,
                   const std::string& activation_dtype, const std::string& dir) {
  std::string command = std::string(DEPTHBENCH_PYTHON) + " " + kScript + " run --dtype float32" +
                        " --activation-dtype " + activation_dtype + " --weights";
  for (const std::string& p : in) command += " " + p;
  command += " --out";
  for (const std::string& p : out) command += " " + p;
  const std::string log = dir + "/reference_" + activation_dtype + ".log";
  BOOST_REQUIRE_MESSAGE(std::system((command + " > " + log + " 2>&1").c_str()) == 0,
                        "reference failed: see " + log);
}

Result read_reference(const std::string& path, const ParameterLayout& layout) {
  H5Handle f = test::open_h5(path);
  Result r;
  r.loss = test::read_tensor(f.get(), "loss")[0];
  for (const ParameterSpec& s : layout.specs()) {
    const std::vector<double> g = test::read_tensor(f.get(), "grad/" + s.name);
    r.grads.insert(r.grads.end(), g.begin(), g.end());
  }
  return r;
}

// ‖a − b‖ / ‖b‖ over [begin, end) (the whole gradient by default).
double relative_distance(const std::vector<double>& a, const std::vector<double>& b,
                         size_t begin = 0, size_t end = size_t(-1)) {
  end = std::min(end, b.size());
  double diff = 0, norm = 1e-300;
  for (size_t i = begin; i < end; ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

// The parameter whose gradient is farthest (relative L2) from the reference's, for the message.
std::string worst_parameter(const Result& a, const Result& b, const ParameterLayout& layout) {
  std::string name;
  double worst = -1;
  size_t begin = 0;
  for (const ParameterSpec& s : layout.specs()) {
    const double d = relative_distance(a.grads, b.grads, begin, begin + size_t(s.size()));
    if (d > worst) worst = d, name = s.name;
    begin += size_t(s.size());
  }
  char text[160];
  std::snprintf(text, sizeof text, "%s %.1e", name.c_str(), worst);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bf16_storage_agrees_with_the_pytorch_emulation) {
  cpu::set_cpu_threads(1);
  // A folder of its own: two builds may run this test at the same time on one machine.
  std::string dir =
      (std::filesystem::temp_directory_path() / "depthbench_pytorch_bf16_XXXXXX").string();
  BOOST_REQUIRE(::mkdtemp(dir.data()) != nullptr);
  const std::vector<Case> all = cases();
  std::vector<std::string> in, out_fp32, out_bf16;
  for (size_t i = 0; i < all.size(); ++i) {
    const ModelConfig c = config_of(all[i]);
    const std::string stem = dir + "/case" + std::to_string(i);
    in.push_back(stem + "_weights.h5");
    out_fp32.push_back(stem + "_fp32.h5");
    out_bf16.push_back(stem + "_bf16.h5");
    write_weights(in.back(), c, build_layout(c), jittered_weights(c), batch_tokens(c));
  }
  run_reference(in, out_fp32, "fp32", dir);
  run_reference(in, out_bf16, "bf16", dir);

  for (size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST_CONTEXT(all[i].name()) {
      const ModelConfig c = config_of(all[i]);
      const ParameterLayout layout = build_layout(c);
      const std::vector<float> weights = jittered_weights(c);
      const std::vector<int32_t> tokens = batch_tokens(c);
      const Result bf16 = ours(c, ActivationDtype::bf16, weights, tokens);
      const Result fp32 = ours(c, ActivationDtype::fp32, weights, tokens);
      const Result ref_bf16 = read_reference(out_bf16[i], layout);
      const Result ref_fp32 = read_reference(out_fp32[i], layout);
      if (std::getenv("DUMP")) {  // DEBUG
        H5Handle f = test::create_h5(in[i] + ".ours.h5");
        size_t b = 0;
        for (const ParameterSpec& s : layout.specs()) {
          test::write_tensor(f.get(), "grad_" + s.name, {hsize_t(s.size())}, bf16.grads.data() + b);
          b += s.size();
        }
        test::write_tensor(f.get(), "loss", {1}, &bf16.loss);
      }

      const double loss_error = std::fabs(bf16.loss - ref_bf16.loss) / std::fabs(ref_bf16.loss);
      const double agree = relative_distance(bf16.grads, ref_bf16.grads);
      const double apart = relative_distance(bf16.grads, ref_fp32.grads);
      const double floor = relative_distance(fp32.grads, ref_fp32.grads);
      std::printf(
          "pytorch bf16 %-26s loss %.1e  gradient: vs emulation %.1e (worst %s), vs fp32 "
          "reference %.1e (ratio %.0f); fp32 model vs fp32 reference %.1e\n",
          all[i].name().c_str(), loss_error, agree, worst_parameter(bf16, ref_bf16, layout).c_str(),
          apart, apart / agree, floor);
      BOOST_TEST(loss_error < kLossTolerance);
      BOOST_TEST(agree < kGradientTolerance, "gradient vs emulation " << agree);
      // Discrimination: the fp32 computation lies well outside what the tolerance accepts.
      BOOST_TEST(apart > 3 * kGradientTolerance, "gradient vs fp32 reference " << apart);
      BOOST_TEST(apart > 10 * agree, "ratio " << apart / agree);
    }
  }
  if (!std::getenv("DUMP")) std::filesystem::remove_all(dir);
}
