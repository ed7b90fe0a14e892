// Weight and checkpoint files (doc/hdf5-schema.md): every tensor by name with its shape, the
// model config as attributes, a bit-exact round trip (resume depends on it), format-1 flat files
// still read, and a file of another model refused by the name of the tensor it lacks.
#define BOOST_TEST_MODULE checkpoint
#define BOOST_TEST_DYN_LINK
#include "io/checkpoint.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "core/rng.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "support/h5_tensors.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {

ModelConfig small_hc_model() {
  ModelConfig m;
  m.arch = "hc";
  m.n_layer = 2;
  m.d_model = 16;
  m.n_head = 2;
  m.n_kv_head = 1;
  m.qk_norm = true;
  m.vocab_size = 11;
  return m;
}

// A buffer of the layout: random parameters, the padding between them zero (as in a model).
std::vector<float> random_values(const ParameterLayout& layout, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(layout.storage_size());
  for (const ParameterSpec& s : layout.specs())
    for (int64_t i = 0; i < s.size(); ++i) v[s.offset + i] = float(rng.truncated_normal(1.0));
  return v;
}

// The parameters back to back, as format-1 files stored them.
std::vector<double> packed(const ParameterLayout& layout, const std::vector<float>& values) {
  std::vector<double> out;
  for (const ParameterSpec& s : layout.specs())
    out.insert(out.end(), values.begin() + s.offset, values.begin() + s.offset + s.size());
  return out;
}

Checkpoint random_checkpoint(const ModelConfig& m) {
  const ParameterLayout layout = build_layout(m);
  Checkpoint c;
  c.run_id = "0123456789abcdef";
  c.model = m;
  c.step = 7;
  c.adam_steps = 7;
  c.best_val_loss = 2.5;
  c.best_step = 5;
  c.params = random_values(layout, 1);
  c.adam_m = random_values(layout, 2);
  c.adam_v = random_values(layout, 3);
  return c;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int64_t read_int_attribute(hid_t file, const char* name) {
  H5Handle attr(H5_CHECK(H5Aopen(file, name, H5P_DEFAULT)), H5Aclose);
  int64_t value = 0;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, &value));
  return value;
}

void write_int_attribute(hid_t file, const char* name, int64_t value) {
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(
      H5_CHECK(H5Acreate2(file, name, H5T_NATIVE_INT64, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
      H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value));
}

}  // namespace

BOOST_AUTO_TEST_CASE(weights_and_moments_round_trip_bit_for_bit_by_name) {
  const fs::path path = fresh_dir("depthbench_checkpoint_round_trip") / "run.ckpt";
  const Checkpoint written = random_checkpoint(small_hc_model());
  write_checkpoint(path.string(), written);
  const auto read = read_checkpoint(path.string(), written.model);
  BOOST_REQUIRE(read.has_value());
  BOOST_TEST(read->run_id == written.run_id);
  BOOST_TEST(read->step == 7);
  BOOST_TEST(read->best_step == 5);
  BOOST_TEST(read->params == written.params);
  BOOST_TEST(read->adam_m == written.adam_m);
  BOOST_TEST(read->adam_v == written.adam_v);
}

BOOST_AUTO_TEST_CASE(each_tensor_is_its_own_dataset_with_its_true_shape) {
  const fs::path path = fresh_dir("depthbench_checkpoint_named") / "run.ckpt";
  const Checkpoint c = random_checkpoint(small_hc_model());
  write_checkpoint(path.string(), c);
  const ParameterLayout layout = build_layout(c.model);
  H5Handle file = test::open_h5(path.string());
  for (const char* group : {"params", "adam_m", "adam_v"}) {
    const std::vector<float>& values = std::string(group) == "params"   ? c.params
                                       : std::string(group) == "adam_m" ? c.adam_m
                                                                        : c.adam_v;
    for (const ParameterSpec& spec : layout.specs()) {
      const std::string name = std::string(group) + "/" + spec.name;
      H5Handle set(H5_CHECK(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT)), H5Dclose);
      H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
      std::vector<hsize_t> dims(H5Sget_simple_extent_ndims(space.get()));
      H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
      BOOST_TEST(std::vector<int64_t>(dims.begin(), dims.end()) == spec.shape, name);
      const std::vector<double> stored = test::read_tensor(file.get(), name);
      for (int64_t i = 0; i < spec.size(); ++i)
        BOOST_REQUIRE(float(stored[i]) == values[spec.offset + i]);
    }
  }
  // [n, n+1] with n = 4 streams; wk of 1 KV head of head_dim 8: the shapes the doc gives.
  H5Handle alpha(H5Dopen2(file.get(), "params/blocks.1.ffn_hc.static_alpha", H5P_DEFAULT),
                 H5Dclose);
  BOOST_TEST(alpha.get() >= 0);
  BOOST_TEST(test::read_tensor(file.get(), "params/blocks.0.wk").size() == 8u * 16u);
}

BOOST_AUTO_TEST_CASE(the_model_config_is_recorded_as_attributes) {
  const fs::path path = fresh_dir("depthbench_checkpoint_attributes") / "run.weights";
  Checkpoint c = random_checkpoint(small_hc_model());
  c.adam_m.clear();  // a weights file: no optimizer state
  c.adam_v.clear();
  write_checkpoint(path.string(), c);
  H5Handle file = test::open_h5(path.string());
  BOOST_TEST(read_int_attribute(file.get(), "format_version") == kWeightsFormatVersion);
  BOOST_TEST(read_string_attribute(file.get(), "arch") == "hc");
  BOOST_TEST(read_string_attribute(file.get(), "design_options").find("hc_streams=4") !=
             std::string::npos);
  BOOST_TEST(read_int_attribute(file.get(), "n_kv_head") == 1);
  BOOST_TEST(read_int_attribute(file.get(), "head_dim") == 8);
  BOOST_TEST(read_int_attribute(file.get(), "ff") == c.model.ff_dim());
  BOOST_TEST(read_int_attribute(file.get(), "qk_norm") == 1);
  BOOST_TEST(H5Lexists(file.get(), "adam_m", H5P_DEFAULT) == 0);
  const auto read = read_checkpoint(path.string(), c.model);
  BOOST_TEST(read->adam_m.empty());
  BOOST_TEST(read->params == c.params);
}

BOOST_AUTO_TEST_CASE(a_format_1_flat_file_is_still_read) {
  const fs::path path = fresh_dir("depthbench_checkpoint_flat") / "old.ckpt";
  const Checkpoint c = random_checkpoint(small_hc_model());
  {
    H5Handle file = test::create_h5(path.string());
    test::write_string_attribute(file.get(), "run_id", c.run_id);
    write_int_attribute(file.get(), "step", c.step);
    write_int_attribute(file.get(), "adam_steps", c.adam_steps);
    test::write_double_attribute(file.get(), "best_val_loss", c.best_val_loss);
    write_int_attribute(file.get(), "best_step", c.best_step);
    for (const auto& [name, values] :
         {std::pair{"params", &c.params}, {"adam_m", &c.adam_m}, {"adam_v", &c.adam_v}}) {
      const std::vector<double> wide = packed(build_layout(c.model), *values);  // floats, exactly
      test::write_tensor(file.get(), name, {hsize_t(wide.size())}, wide.data());
    }
  }
  const auto read = read_checkpoint(path.string(), c.model);
  BOOST_REQUIRE(read.has_value());
  BOOST_TEST(read->params == c.params);
  BOOST_TEST(read->adam_v == c.adam_v);
  BOOST_TEST(read->best_val_loss == 2.5);
}

BOOST_AUTO_TEST_CASE(a_file_of_another_model_is_refused_naming_the_missing_tensor) {
  const fs::path path = fresh_dir("depthbench_checkpoint_other_model") / "run.ckpt";
  const Checkpoint c = random_checkpoint(small_hc_model());
  write_checkpoint(path.string(), c);
  ModelConfig deeper = c.model;
  deeper.n_layer = 3;
  try {
    read_checkpoint(path.string(), deeper);
    BOOST_FAIL("a file of a two-block model was read as a three-block one");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("params/blocks.2.wq") != std::string::npos, e.what());
  }
  ModelConfig wider = c.model;
  wider.vocab_size = 12;
  try {
    read_checkpoint(path.string(), wider);
    BOOST_FAIL("a tensor of the wrong shape was read");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("params/embed has shape [11, 16]") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(the_recorded_config_rebuilds_the_same_model) {
  const fs::path path = fresh_dir("depthbench_checkpoint_description") / "run.weights";
  ModelConfig m = small_hc_model();
  m.design_options["hc_streams"] = "2";
  m.rope_theta = 500000;
  Checkpoint c = random_checkpoint(m);
  c.seq_len = 48;
  write_checkpoint(path.string(), c);
  const Checkpoint described = read_weights_description(path.string());
  BOOST_TEST(described.seq_len == 48);
  BOOST_TEST(described.run_id == c.run_id);
  const ModelConfig& r = described.model;
  BOOST_TEST(r.arch == "hc");
  BOOST_TEST(r.option("hc_streams", std::string()) == "2");
  BOOST_TEST(r.rope_theta == 500000.0);
  BOOST_TEST((r.n_layer == m.n_layer && r.d_model == m.d_model && r.n_head == m.n_head &&
              r.kv_heads() == 1 && r.ff_dim() == m.ff_dim() && r.qk_norm));
  const ParameterLayout a = build_layout(m), b = build_layout(r);
  BOOST_REQUIRE(a.specs().size() == b.specs().size());
  for (size_t i = 0; i < a.specs().size(); ++i) {
    BOOST_TEST(a.specs()[i].name == b.specs()[i].name);
    BOOST_TEST(a.specs()[i].shape == b.specs()[i].shape);
  }
}
