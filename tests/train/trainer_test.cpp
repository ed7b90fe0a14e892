// The training loop end to end on real token files and real HDF5 run files: determinism,
// learning, the run file's contents read back with the HDF5 C API, and recorded failures.
#define BOOST_TEST_MODULE trainer
#define BOOST_TEST_DYN_LINK
#include "train/trainer.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>

#include "core/rng.hpp"
#include "data/token_data.hpp"
#include "data/token_dataset.hpp"
#include "data/validation_windows.hpp"
#include "data/window_order.hpp"
#include "io/checkpoint.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "support/h5_tensors.hpp"
#include "train/adamw.hpp"
#include "train/mpi_test_main.hpp"
#include "train/recipe.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {

// A learnable token stream: a repeating pattern of 8 phrases with some noise.
std::vector<uint32_t> patterned_tokens(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint32_t> ids;
  const std::vector<std::vector<uint32_t>> phrases = {{1, 2, 3, 4}, {5, 6, 7}, {8, 9, 10, 11, 12},
                                                      {2, 4, 6, 8}, {13, 14},  {15, 1, 15},
                                                      {3, 3, 7},    {9, 2, 11}};
  while (ids.size() < n) {
    for (uint32_t t : phrases[rng.below(phrases.size())]) ids.push_back(t);
    if (rng.below(10) == 0) ids.push_back(uint32_t(rng.below(16)));
  }
  ids.resize(n);
  return ids;
}

RunConfig tiny_run(const fs::path& dir) {
  fs::create_directories(dir);
  data::write_olmo_raw((dir / "train.npy").string(), patterned_tokens(20000, 1), 2);
  data::write_olmo_raw((dir / "val.npy").string(), patterned_tokens(4000, 2), 2);
  RunConfig c;
  c.model.n_layer = 2;
  c.model.d_model = 32;
  c.model.n_head = 4;
  c.model.vocab_size = 16;
  c.recipe.steps = 40;
  c.recipe.seq_len = 32;
  c.recipe.global_batch_sequences = 8;
  c.recipe.micro_batch_sequences = 3;  // uneven micro-batches exercise the accumulation
  c.recipe.learning_rate = 1e-2;
  c.val_interval = 10;
  c.val_windows = 16;
  c.threads = 1;
  c.data.train_files = {(dir / "train.npy").string()};
  c.data.val_files = {(dir / "val.npy").string()};
  c.out_dir = (dir / "runs").string();
  return c;
}

H5Handle open_run(const RunConfig& c) {
  return test::open_h5(RunPaths::of(c).run_file);
}

}  // namespace

BOOST_AUTO_TEST_CASE(same_config_and_seed_give_bit_identical_loss_curves) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_determinism";
  fs::remove_all(root);
  RunConfig a = tiny_run(root), b = a;
  b.out_dir = (root / "runs_b").string();
  b.threads = 2;  // reductions are chunked: the thread count must not change the result
  BOOST_REQUIRE(train_run(a, Communicator::world(), false).status == "completed");
  BOOST_REQUIRE(train_run(b, Communicator::world(), false).status == "completed");
  const auto la = test::read_tensor(open_run(a).get(), "curves/train_loss");
  const auto lb = test::read_tensor(open_run(b).get(), "curves/train_loss");
  BOOST_TEST(la.size() == lb.size());
  for (size_t i = 0; i < la.size(); ++i) BOOST_TEST(la[i] == lb[i]);
}

// train.activation_dtype = bf16 on the CPU: the cores store bf16, the run trains to within
// bf16 rounding of the fp32 run, and each run file says what its cores stored.
BOOST_AUTO_TEST_CASE(bf16_activation_storage_trains_and_the_run_file_says_so) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_bf16_storage";
  fs::remove_all(root);
  RunConfig fp32 = tiny_run(root), bf16 = fp32;
  bf16.activation_dtype = "bf16";
  bf16.out_dir = (root / "runs_bf16").string();
  BOOST_REQUIRE(train_run(fp32, Communicator::world(), false).status == "completed");
  BOOST_REQUIRE(train_run(bf16, Communicator::world(), false).status == "completed");
  H5Handle f32 = open_run(fp32), f16 = open_run(bf16);
  BOOST_TEST(read_string_attribute(f32.get(), "activation_dtype") == "fp32");  // auto on the CPU
  BOOST_TEST(read_string_attribute(f16.get(), "activation_dtype") == "bf16");
  const auto l32 = test::read_tensor(f32.get(), "curves/train_loss");
  const auto l16 = test::read_tensor(f16.get(), "curves/train_loss");
  BOOST_REQUIRE(l32.size() == l16.size());
  BOOST_TEST(l32 != l16);  // rounded storage is another computation
  BOOST_TEST(std::abs(l16.back() - l32.back()) <= 0.02 * l32.back());
  BOOST_TEST(l16.back() < 0.8 * l16.front());
}

// train.state_dtype = bf16: HC's streams rounded between sublayers; the run trains to within
// bf16 rounding of the fp32-state run, and each run file says what its state was rounded to.
BOOST_AUTO_TEST_CASE(bf16_state_trains_and_the_run_file_says_so) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_bf16_state";
  fs::remove_all(root);
  RunConfig fp32 = tiny_run(root);
  fp32.model.arch = "hc";
  RunConfig bf16 = fp32;
  bf16.state_dtype = "bf16";
  bf16.out_dir = (root / "runs_bf16").string();
  BOOST_REQUIRE(train_run(fp32, Communicator::world(), false).status == "completed");
  BOOST_REQUIRE(train_run(bf16, Communicator::world(), false).status == "completed");
  H5Handle f32 = open_run(fp32), f16 = open_run(bf16);
  BOOST_TEST(read_string_attribute(f32.get(), "state_dtype") == "fp32");
  BOOST_TEST(read_string_attribute(f16.get(), "state_dtype") == "bf16");
  const auto l32 = test::read_tensor(f32.get(), "curves/train_loss");
  const auto l16 = test::read_tensor(f16.get(), "curves/train_loss");
  BOOST_REQUIRE(l32.size() == l16.size());
  BOOST_TEST(l32 != l16);
  BOOST_TEST(std::abs(l16.back() - l32.back()) <= 0.02 * l32.back());
  BOOST_TEST(l16.back() < 0.8 * l16.front());
}

BOOST_AUTO_TEST_CASE(training_lowers_validation_loss_and_the_run_file_describes_itself) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_file";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  const TrainResult r = train_run(c, Communicator::world(), false);
  BOOST_REQUIRE(r.status == "completed");
  BOOST_TEST(!fs::exists(RunPaths::of(c).run_file + ".tmp"));
  BOOST_TEST(fs::exists(RunPaths::of(c).weights));
  H5Handle f = open_run(c);
  BOOST_TEST(read_string_attribute(f.get(), "status") == "completed");
  BOOST_TEST(read_string_attribute(f.get(), "arch") == "pre_ln");
  BOOST_TEST(read_string_attribute(f.get(), "config").find("[model]") != std::string::npos);
  // The attention path each shape ran (the CUDA backend lists shapes; the CPU has one path).
  BOOST_TEST(read_string_attribute(f.get(), "attention") == "auto");
  BOOST_TEST(read_string_attribute(f.get(), "attention_paths") == "cpu");
  H5Handle attr(H5Aopen(f.get(), "params_total", H5P_DEFAULT), H5Aclose);
  int64_t total = 0;
  H5Aread(attr.get(), H5T_NATIVE_INT64, &total);
  BOOST_TEST(total == count_parameters(c.model).total);
  const auto val = test::read_tensor(f.get(), "curves/val_loss");
  const auto steps = test::read_tensor(f.get(), "curves/val_step");
  BOOST_REQUIRE(val.size() == 5);  // steps 0, 10, 20, 30 and the final 40
  BOOST_TEST(steps.front() == 0);
  BOOST_TEST(steps.back() == 40);
  std::printf(
      "tiny pattern model: validation loss %.3f at step 0 → %.3f at step 40 (ln V = %.3f)\n",
      val.front(), val.back(), std::log(16.0));
  BOOST_TEST(val.back() < val.front() - 0.3);
  BOOST_TEST(val.back() < std::log(16.0) - 1.0);
  // Running again skips the completed run.
  BOOST_TEST(train_run(c, Communicator::world(), false).status == "skipped");
  BOOST_TEST(!fs::exists(RunPaths::of(c).initial_weights));  // not asked for
}

BOOST_AUTO_TEST_CASE(initial_weights_are_the_seeded_init_and_score_the_step_0_validation) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_initial";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.save_initial_weights = true;
  c.recipe.steps = 5;
  BOOST_REQUIRE(train_run(c, Communicator::world(), false).status == "completed");
  const auto initial = read_checkpoint(RunPaths::of(c).initial_weights, c.model);
  BOOST_REQUIRE(initial.has_value());
  BOOST_TEST(initial->step == 0);
  Model<float> model(c.model);
  model.initialize(c.seed);
  const auto values = model.params().values();
  BOOST_TEST(initial->params == std::vector<float>(values.begin(), values.end()));
  // The first validation is of exactly these weights, on the val_windows windows spread over
  // the validation files (data/validation_windows.hpp).
  data::TokenFileOptions options;
  options.vocab_size = c.model.vocab_size;
  const data::TokenDataset val(c.data.val_files, c.recipe.seq_len, options);
  double sum = 0;
  std::vector<int32_t> window(c.recipe.seq_len);
  const std::vector<int64_t> windows = data::validation_windows(val.num_windows(), c.val_windows);
  BOOST_REQUIRE(int64_t(windows.size()) == c.val_windows);
  for (int64_t w : windows) {
    val.read_window(w, window);
    sum += model.forward_loss(window.data(), 1, c.recipe.seq_len) / (c.recipe.seq_len - 1);
  }
  H5Handle f = open_run(c);
  const auto steps = test::read_tensor(f.get(), "curves/val_step");
  const auto losses = test::read_tensor(f.get(), "curves/val_loss");
  BOOST_REQUIRE(steps.size() == 2u);  // step 0 and the final 5
  BOOST_TEST(steps[0] == 0);
  BOOST_TEST(losses[0] == sum / double(c.val_windows));
}

BOOST_AUTO_TEST_CASE(a_missing_data_file_is_recorded_as_failed_with_the_file_name) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_missing";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.data.val_files = {(root / "nope.npy").string()};
  const TrainResult r = train_run(c, Communicator::world(), false);
  BOOST_TEST(r.status == "failed");
  BOOST_TEST(r.reason.find("nope.npy") != std::string::npos);
  H5Handle f = open_run(c);
  BOOST_TEST(read_string_attribute(f.get(), "status") == "failed");
  BOOST_TEST(read_string_attribute(f.get(), "status_reason").find("nope.npy") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_huge_learning_rate_is_recorded_as_diverged_with_step_and_reason) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_diverge";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.recipe.learning_rate = 1e4;
  c.recipe.grad_clip = 0;
  const TrainResult r = train_run(c, Communicator::world(), false);
  BOOST_TEST(r.status == "diverged");
  BOOST_TEST(r.status_step >= 0);
  H5Handle f = open_run(c);
  BOOST_TEST(read_string_attribute(f.get(), "status") == "diverged");
  BOOST_TEST(!read_string_attribute(f.get(), "status_reason").empty());
}

BOOST_AUTO_TEST_CASE(learning_rate_schedule_warms_up_then_decays_to_ten_percent) {
  Recipe r;
  r.steps = 100;
  r.learning_rate = 1e-3;
  BOOST_TEST(r.warmup_steps() == 10);
  BOOST_TEST(std::fabs(learning_rate_at(r, 0) - 1e-4) < 1e-15);
  BOOST_TEST(std::fabs(learning_rate_at(r, 9) - 1e-3) < 1e-15);
  BOOST_TEST(std::fabs(learning_rate_at(r, 99) - 1e-4) < 1e-12);
  for (int s = 10; s < 99; ++s) BOOST_TEST(learning_rate_at(r, s + 1) <= learning_rate_at(r, s));
}

// The micro-batches' losses add into one accumulator in the backend's memory, read once per step
// (doc/cuda.md, "Host overhead"). On the CPU the curve must be exactly what the host sum of each
// micro-batch's returned loss gave before: the same training replayed here by hand, one
// forward_backward (and so one read) per micro-batch, through uneven micro-batches of 3, 3, 2.
BOOST_AUTO_TEST_CASE(the_train_loss_is_the_host_sum_of_each_micro_batch_loss_bit_for_bit) {
  const fs::path root = fs::temp_directory_path() / "depthbench_trainer_loss_sum";
  fs::remove_all(root);
  RunConfig c = tiny_run(root);
  c.recipe.steps = 4;
  c.log_interval = 1;
  BOOST_REQUIRE(train_run(c, Communicator::world(), false).status == "completed");
  const auto curve = test::read_tensor(open_run(c).get(), "curves/train_loss");
  BOOST_REQUIRE(curve.size() == 4u);
  BOOST_TEST(read_string_attribute(open_run(c).get(), "cuda_graphs") == "not applicable (cpu)");

  const Recipe& r = c.recipe;
  data::TokenFileOptions options;
  options.vocab_size = c.model.vocab_size;
  const data::TokenDataset train(c.data.train_files, r.seq_len, options);
  data::WindowOrder order(train.num_windows(), c.seed);
  Model<float> model(c.model);
  model.initialize(c.seed);
  AdamW<float> optimizer(model.layout(), r);
  const int T = r.seq_len;
  const double grad_scale = 1.0 / (double(r.global_batch_sequences) * (T - 1));
  std::vector<int32_t> batch(r.micro_batch_sequences * T);
  for (int64_t step = 0; step < r.steps; ++step) {
    model.params().zero_grads();
    double loss_sum = 0;
    for (int64_t first = 0; first < r.global_batch_sequences; first += r.micro_batch_sequences) {
      const int64_t micro = std::min(r.micro_batch_sequences, r.global_batch_sequences - first);
      for (int64_t j = 0; j < micro; ++j)
        train.read_window(order.window_at(step * r.global_batch_sequences + first + j),
                          std::span<int32_t>(batch).subspan(j * T, T));
      loss_sum += model.forward_backward(batch.data(), micro, T, grad_scale);
    }
    const double norm = global_norm(model.params());
    const double clip = (r.grad_clip > 0 && norm > r.grad_clip) ? r.grad_clip / norm : 1.0;
    optimizer.step(model.params(), learning_rate_at(r, step), clip);
    BOOST_TEST(curve[step] == loss_sum * grad_scale);
  }
}
