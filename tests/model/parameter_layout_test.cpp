// The flat parameter buffer (doc/parameters.md): every parameter of every registered design starts
// at a multiple of ParameterLayout::kAlignment elements, the padding between parameters does not
// count as parameters, stays zero through training and does not change the gradient norm.
#define BOOST_TEST_MODULE parameter_layout
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/parameters.hpp"
#include "model/residual/registry.hpp"
#include "train/adamw.hpp"

using namespace db;

namespace {

ModelConfig shape(const std::string& arch, int n_layer, int d, int n_head, int n_kv_head) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = n_layer;
  c.d_model = d;
  c.n_head = n_head;
  c.n_kv_head = n_kv_head;
  c.vocab_size = 11;
  return c;
}

// True where no parameter lives.
std::vector<bool> padding_mask(const ParameterLayout& layout) {
  std::vector<bool> pad(layout.storage_size(), true);
  for (const ParameterSpec& s : layout.specs())
    std::fill_n(pad.begin() + s.offset, s.size(), false);
  return pad;
}

template <class Values>
bool padding_is_zero(const ParameterLayout& layout, const Values& values) {
  const std::vector<bool> pad = padding_mask(layout);
  for (size_t i = 0; i < pad.size(); ++i)
    if (pad[i] && values[i] != 0) return false;
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_parameter_of_every_design_is_aligned_and_counted_once) {
  // d = 36: norms of 36 values leave padding; d = 40 with mHC's default n = 4 streams.
  const std::vector<ModelConfig> shapes = {shape("", 2, 16, 2, 1), shape("", 3, 36, 2, 1),
                                           shape("", 2, 40, 4, 4)};
  for (const DesignInfo& design : all_designs())
    for (ModelConfig c : shapes) {
      c.arch = design.name;
      c.qk_norm = c.d_model == 36;
      BOOST_TEST_CONTEXT(design.name << " d=" << c.d_model) {
        const ParameterLayout layout = build_layout(c);
        int64_t sum = 0, end = 0;
        for (const ParameterSpec& s : layout.specs()) {
          BOOST_TEST(s.offset % ParameterLayout::kAlignment == 0, s.name);
          BOOST_TEST(s.offset >= end, s.name);  // no overlap
          end = s.offset + s.size();
          sum += s.size();
        }
        BOOST_TEST(layout.storage_size() >= end);
        BOOST_TEST(layout.storage_size() % ParameterLayout::kAlignment == 0);
        BOOST_TEST(layout.parameter_count() == sum);
        BOOST_TEST(count_parameters(c).total == sum);
      }
    }
}

BOOST_AUTO_TEST_CASE(the_parameter_count_leaves_out_the_padding) {
  // Pre-LN, L = 2, d = 36, H = 2 (hd = 18), H_kv = 1, ff = 96, V = 11: per block q, o 36·36,
  // k, v 36·18, SwiGLU 3·36·96, two norms of 36 → 14,328; embedding, head 11·36, final norm 36.
  const ModelConfig c = shape("pre_ln", 2, 36, 2, 1);
  BOOST_TEST(c.ff_dim() == 96);
  BOOST_TEST(count_parameters(c).total == 2 * 14328 + 2 * 396 + 36);
  BOOST_TEST(build_layout(c).storage_size() > count_parameters(c).total);  // the norms are padded
}

BOOST_AUTO_TEST_CASE(padding_stays_zero_and_leaves_the_gradient_norm_unchanged) {
  ModelConfig c = shape("mhc", 2, 36, 2, 1);
  Model<float> model(c);
  model.initialize(3);
  const ParameterLayout& layout = model.layout();
  BOOST_TEST_REQUIRE(layout.storage_size() > layout.parameter_count());
  Recipe recipe;
  recipe.weight_decay = 0.1;
  AdamW<float> optimizer(layout, recipe);
  std::vector<int32_t> tokens(2 * 6);
  Rng rng(4);
  for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
  for (int step = 0; step < 3; ++step) {
    model.params().zero_grads();
    model.forward_backward(tokens.data(), 2, 6, 1.0);
    // The norm of the gradients back to back, summed by the same code as an unpadded buffer.
    std::vector<float> packed;
    const std::span<float> grads = model.params().grads();
    for (const ParameterSpec& s : layout.specs())
      packed.insert(packed.end(), grads.begin() + s.offset, grads.begin() + s.offset + s.size());
    const double norm = global_norm(model.params());
    BOOST_TEST(norm == global_norm(std::span<const float>(packed)));  // bit for bit
    BOOST_TEST(padding_is_zero(layout, grads));
    optimizer.step(model.params(), 1e-2, 1.0);
  }
  BOOST_TEST(padding_is_zero(layout, model.params().values()));
  BOOST_TEST(padding_is_zero(layout, optimizer.first_moment()));
  BOOST_TEST(padding_is_zero(layout, optimizer.second_moment()));
}
