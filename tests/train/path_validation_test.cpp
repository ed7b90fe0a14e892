// train.validate (train/path_validation.hpp, doc/cuda.md "Fast paths validated before the first
// step"): the comparison of two micro-batches (a fast path scaled by 1.01 fails, bf16-sized
// noise passes, a NaN fails), the config key, the CPU run's `validation` group ("cpu: reference
// paths"), the whole check run on the CPU backend seen as one with fast paths (bf16 storage and
// the fused kernels are real paths there: kept within tolerance; with a tolerance of 0 switched
// off, recorded, and refused under strict), and the planted wrong flash attention on a CUDA
// backend (skips with a line where no CUDA backend can run, e.g. without a GPU or the emulated
// device).
#define BOOST_TEST_MODULE path_validation
#define BOOST_TEST_DYN_LINK
#include "train/path_validation.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/token_writer.hpp"
#include "io/run_file.hpp"
#include "ops/backend.hpp"
#include "support/h5_tensors.hpp"
#include "train/mpi_test_main.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"
#include "train/trainer.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {

MicroBatchResult random_result(uint64_t seed) {
  Rng rng(seed);
  MicroBatchResult r;
  r.loss = 2.5;
  r.grad_norm = 1.25;
  for (const char* name : {"wte", "h.0.attn.wo", "h.0.mlp.w1"}) {
    r.names.push_back(name);
    std::vector<float> g(4096);
    for (float& x : g) x = float(rng.uniform() - 0.5);
    r.grads.push_back(g);
  }
  return r;
}

RunConfig tiny_run(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<uint32_t> train(20000), val(4000);
  Rng rng(3);
  for (uint32_t& t : train) t = uint32_t(rng.below(16));
  for (uint32_t& t : val) t = uint32_t(rng.below(16));
  data::write_olmo_raw((dir / "train.npy").string(), train, 2);
  data::write_olmo_raw((dir / "val.npy").string(), val, 2);
  RunConfig c;
  c.model.n_layer = 2;
  c.model.d_model = 32;
  c.model.n_head = 4;
  c.model.vocab_size = 16;
  c.recipe.steps = 2;
  c.recipe.seq_len = 32;
  c.recipe.global_batch_sequences = 4;
  c.recipe.micro_batch_sequences = 2;
  c.val_interval = 10;
  c.val_windows = 4;
  c.threads = 1;
  c.data.train_files = {(dir / "train.npy").string()};
  c.data.val_files = {(dir / "val.npy").string()};
  c.out_dir = (dir / "runs").string();
  return c;
}

std::string group_string(hid_t file, const std::string& group, const std::string& name) {
  H5Handle g(H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose);
  return read_string_attribute(g.get(), name);
}

// The CPU backend, seen as a backend with fast paths: the whole check runs on the CPU, where
// bf16 storage and the fused kernels are real paths.
class CpuWithFastPaths final : public Backend {
 public:
  const Backend& cpu = find_backend("cpu");
  const char* name() const override { return "cpu-checked"; }
  std::string unavailable_reason() const override { return ""; }
  int auto_preference() const override { return 0; }
  std::string device_name() const override { return cpu.device_name(); }
  std::vector<std::pair<std::string, std::string>> properties() const override { return {}; }
  bool has_fast_paths() const override { return true; }
  void start(const Communicator&) override {}
  void set_host_threads(int) override {}
  int host_threads() const override { return cpu.host_threads(); }
  MemorySpace space() const override { return cpu.space(); }
  void release_cached_memory() override {}
  size_t memory_used_bytes() const override { return cpu.memory_used_bytes(); }
  size_t memory_total_bytes() const override { return cpu.memory_total_bytes(); }
  std::unique_ptr<Ops<float>> make_float_ops(const OpsOptions& options) const override {
    return cpu.make_float_ops(options);
  }
  void adamw_update(float* values, const float* grads, float* m, float* v, const uint8_t* decay,
                    int64_t count, const AdamWUpdate& u, bfloat16* values_bf16) const override {
    cpu.adamw_update(values, grads, m, v, decay, count, u, values_bf16);
  }
  double sum_of_squares(const float* x, int64_t count) const override {
    return cpu.sum_of_squares(x, count);
  }
  std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& run) const override {
    return cpu.make_gradient_reducer(run);
  }
};

std::vector<int32_t> first_tokens(const RunConfig& c) {
  std::vector<int32_t> tokens(size_t(c.recipe.micro_batch_sequences) * c.recipe.seq_len);
  Rng rng(5);
  for (int32_t& t : tokens) t = int32_t(rng.below(16));
  return tokens;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_fast_path_off_by_one_percent_fails_and_bf16_noise_passes) {
  const MicroBatchResult reference = random_result(1);
  MicroBatchResult noisy = reference, scaled = reference, broken = reference;
  Rng rng(2);
  for (auto& g : noisy.grads)
    for (float& x : g) x *= float(1 + (rng.uniform() - 0.5) * 2 * std::ldexp(1.0, -9));
  for (float& x : scaled.grads[1]) x *= 1.01f;
  broken.grads[2][7] = NAN;
  const double tolerance = path_tolerance("attention flash");
  const Difference quiet = compare_micro_batches(noisy, reference);
  BOOST_TEST_MESSAGE("bf16-sized noise: largest tensor " << quiet.largest_tensor);
  BOOST_TEST(quiet.largest() < tolerance);
  const Difference loud = compare_micro_batches(scaled, reference);
  BOOST_TEST(loud.largest_tensor == 0.01, boost::test_tools::tolerance(1e-4));
  BOOST_TEST(loud.worst_tensor == "h.0.attn.wo");
  BOOST_TEST(loud.largest() > tolerance);
  BOOST_TEST(std::isinf(compare_micro_batches(broken, reference).largest()));
  MicroBatchResult off_loss = reference;
  off_loss.loss *= 1.02;
  BOOST_TEST(compare_micro_batches(off_loss, reference).loss == 0.02,
             boost::test_tools::tolerance(1e-9));
}

// A gradient that nearly cancels (a bias summed over every token) is tiny: rounding moves it by
// a large fraction of its own norm, which must not count as a wrong path (mHC's bias in bf16
// storage: 28%); it is measured against 1% of a typical tensor's gradient norm instead.
BOOST_AUTO_TEST_CASE(a_nearly_cancelling_gradient_is_measured_against_a_typical_tensor) {
  MicroBatchResult reference = random_result(1);
  reference.names.push_back("h.0.bias");
  reference.grads.push_back(std::vector<float>(64, 1e-6f));
  MicroBatchResult rounded = reference;
  for (float& x : rounded.grads[3]) x *= 1.3f;
  const Difference d = compare_micro_batches(rounded, reference);
  BOOST_TEST(d.largest_tensor < 1e-3);
  // A typical tensor off by 1% still is 1%.
  for (float& x : rounded.grads[1]) x *= 1.01f;
  BOOST_TEST(compare_micro_batches(rounded, reference).largest_tensor == 0.01,
             boost::test_tools::tolerance(1e-4));
}

BOOST_AUTO_TEST_CASE(the_key_parses_and_stays_out_of_the_run_id) {
  BOOST_TEST(RunConfig().validate == "on");
  for (const char* value : {"on", "off", "strict"}) {
    const RunConfig c = parse_run_config_text(std::string("[train]\nvalidate = ") + value + "\n");
    BOOST_TEST(c.validate == value);
    BOOST_TEST(run_id(c) == run_id(RunConfig()));
  }
  BOOST_CHECK_THROW(parse_run_config_text("[train]\nvalidate = yes\n"), Error);
}

BOOST_AUTO_TEST_CASE(a_cpu_run_records_reference_paths) {
  const fs::path root = fs::temp_directory_path() / "depthbench_path_validation_cpu";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  BOOST_REQUIRE(train_run(c, Communicator::world(), false).status == "completed");
  H5Handle file = test::open_h5(RunPaths::of(c).run_file);
  BOOST_TEST(group_string(file.get(), "validation", "summary") == "cpu: reference paths");
  BOOST_TEST(group_string(file.get(), "validation", "mode") == "on");
  fs::remove_all(root);
}

BOOST_AUTO_TEST_CASE(the_check_keeps_paths_within_tolerance_on_the_cpu) {
  const fs::path root = fs::temp_directory_path() / "depthbench_path_validation_kept";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.activation_dtype = "bf16";  // a real path on the CPU: rounded storage
  const CpuWithFastPaths backend;
  // The run's own first micro-batch, read from its training files as the trainer reads it.
  const PathValidation v = validate_run_paths(c, backend, Communicator::world());
  for (const PathCheck& check : v.checks)
    BOOST_TEST_MESSAGE(check.path << ": " << check.difference.largest() << " (tolerance "
                                  << check.tolerance << "): " << check.decision);
  // bf16 precision (the default): attention auto is checked (the CPU's one attention: the same
  // bits); graphs are on by default (the CPU runs each micro-batch as it comes: the same bits).
  BOOST_REQUIRE(v.checks.size() == 4u);
  BOOST_TEST(v.checks[0].path == "attention auto (cpu)");
  BOOST_TEST(v.checks[0].difference.largest() == 0);
  BOOST_TEST(v.checks[1].path == "bf16 storage");
  BOOST_TEST(v.checks[1].difference.largest() > 0);  // rounding: not the same bits
  BOOST_TEST(v.checks[2].path == "fused kernels");
  BOOST_TEST(v.checks[3].path == "cuda graphs");
  BOOST_TEST(v.checks[3].difference.largest() == 0);
  for (const PathCheck& check : v.checks) BOOST_TEST(check.decision == "kept");
  BOOST_TEST(!v.fell_back);
  BOOST_TEST(v.summary == "4 fast paths checked and kept");
  BOOST_TEST((v.options.activation_dtype == ActivationDtype::bf16));
  BOOST_TEST(v.options.fused_kernels);
  fs::remove_all(root);
}

BOOST_AUTO_TEST_CASE(a_path_out_of_tolerance_is_switched_off_recorded_and_refused_when_strict) {
  const fs::path root = fs::temp_directory_path() / "depthbench_path_validation_off";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.activation_dtype = "bf16";
  const std::vector<int32_t> tokens = first_tokens(c);
  const CpuWithFastPaths backend;
  set_path_tolerance_for_test("bf16 storage", 0.0);  // rounding now counts as wrong
  const PathValidation v = validate_fast_paths(c, backend, Communicator::world(), tokens,
                                               c.recipe.micro_batch_sequences);
  BOOST_REQUIRE(v.checks.size() == 4u);
  BOOST_TEST(v.checks[0].decision == "kept");
  BOOST_TEST(v.checks[1].path == "bf16 storage");
  BOOST_TEST(v.checks[1].decision == "switched off: storing fp32 activations");
  BOOST_TEST(v.fell_back);
  BOOST_TEST(v.summary.rfind("fell back: bf16 storage", 0) == 0);
  BOOST_TEST((v.options.activation_dtype == ActivationDtype::fp32));
  BOOST_TEST(v.checks.back().decision == "kept");  // the later paths still checked
  // In the run file: the group, each check's measurement, tolerance and decision.
  fs::create_directories(c.out_dir);
  {
    RunFile file = RunFile::create((fs::path(c.out_dir) / "v.h5").string());
    record_path_validation(file, v);
    file.publish();
  }
  H5Handle file = test::open_h5((fs::path(c.out_dir) / "v.h5").string());
  BOOST_TEST(group_string(file.get(), "validation/check_1", "path") == "bf16 storage");
  BOOST_TEST(group_string(file.get(), "validation/check_1", "decision") ==
             "switched off: storing fp32 activations");
  H5Handle group(H5Gopen2(file.get(), "validation", H5P_DEFAULT), H5Gclose);
  H5Handle fell(H5Aopen(group.get(), "fell_back", H5P_DEFAULT), H5Aclose);
  int64_t fell_back = 0;
  H5Aread(fell.get(), H5T_NATIVE_INT64, &fell_back);
  BOOST_TEST(fell_back == 1);
  // strict refuses the run instead.
  c.validate = "strict";
  BOOST_CHECK_EXCEPTION(
      validate_fast_paths(c, backend, Communicator::world(), tokens,
                          c.recipe.micro_batch_sequences),
      Error, [](const Error& e) {
        BOOST_TEST_MESSAGE(e.what());
        return std::string(e.what()).find("train.validate = strict: bf16 storage") == 0;
      });
  set_path_tolerance_for_test("bf16 storage", -1);
  fs::remove_all(root);
}

// The planted wrong fast path: our flash attention's output scaled by 1.01
// (DEPTHBENCH_TEST_FLASH_OUTPUT_SCALE, ops/cuda/attention_paths.cpp) is detected, switched off
// (the reference attention runs), recorded; strict refuses. Needs a CUDA backend that runs.
BOOST_AUTO_TEST_CASE(a_planted_wrong_flash_attention_is_detected_switched_off_and_recorded) {
  const Backend* cuda = nullptr;
  for (const Backend* b : registered_backends())
    if (std::string(b->name()) == "cuda") cuda = b;
  if (!cuda || !cuda->available()) {
    BOOST_TEST_MESSAGE("no CUDA backend can run here (" +
                       (cuda ? cuda->unavailable_reason() : std::string("not built")) +
                       "): skipped");
    return;
  }
  setenv("DEPTHBENCH_TEST_FLASH_OUTPUT_SCALE", "1.01", 1);
  const fs::path root = fs::temp_directory_path() / "depthbench_path_validation_cuda";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.backend = "cuda";
  c.precision = "bf16";
  c.attention = "flash";
  c.model.d_model = 64;  // head dim 16
  BOOST_REQUIRE(train_run(c, Communicator::world(), false).status == "completed");
  H5Handle file = test::open_h5(RunPaths::of(c).run_file);
  BOOST_TEST(group_string(file.get(), "validation/check_0", "path").rfind("attention flash", 0) ==
             0);
  BOOST_TEST(group_string(file.get(), "validation/check_0", "decision") ==
             "switched off: using the reference attention");
  BOOST_TEST(group_string(file.get(), "validation", "summary").rfind("fell back: attention", 0) ==
             0);
  RunConfig strict = c;
  strict.validate = "strict";
  strict.name = "strict";
  BOOST_TEST(train_run(strict, Communicator::world(), false).status == "failed");
  unsetenv("DEPTHBENCH_TEST_FLASH_OUTPUT_SCALE");
  fs::remove_all(root);
}
