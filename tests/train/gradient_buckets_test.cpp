// The bucket plan of the overlapped gradient reduction (train/gradient_buckets.hpp): every
// element of the gradient buffer in exactly one bucket, launch order by the position after
// which a bucket is final, and — for every registered design — that no step of the backward
// after a position touches the gradients the plan calls final there (a bucket started too early
// would be summed before its last contribution).
#define BOOST_TEST_MODULE gradient_buckets
#define BOOST_TEST_DYN_LINK
#include "train/gradient_buckets.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"

using namespace db;

namespace {

ModelConfig tiny_config(const std::string& arch, int n_layer) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = n_layer;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 11;
  return c;
}

std::vector<int> identity_schedule(int n_layer) {
  std::vector<int> s(n_layer);
  for (int p = 0; p < n_layer; ++p) s[p] = p;
  return s;
}

// Every element once, aligned, within the size, in launch order, final no earlier than any
// parameter it holds.
void check_plan(const ParameterLayout& layout, const std::vector<int>& schedule,
                const std::vector<GradientBucket>& plan, int64_t bucket_elements) {
  std::vector<int> owner(layout.storage_size(), 0);
  for (size_t k = 0; k < plan.size(); ++k) {
    const GradientBucket& b = plan[k];
    BOOST_TEST(b.begin % ParameterLayout::kAlignment == 0);
    BOOST_TEST(b.count > 0);
    BOOST_TEST(b.count <= bucket_elements);
    for (int64_t i = b.begin; i < b.begin + b.count; ++i) ++owner[i];
    if (k > 0) BOOST_TEST(plan[k - 1].final_after >= b.final_after);
  }
  for (int64_t i = 0; i < layout.storage_size(); ++i)
    if (owner[i] != 1) BOOST_FAIL("element " << i << " lies in " << owner[i] << " buckets");
  for (const GradientBucket& b : plan)
    for (int id = 0; id < int(layout.specs().size()); ++id) {
      const ParameterSpec& s = layout.spec(id);
      if (s.offset < b.begin + b.count && s.offset + s.size() > b.begin)
        BOOST_TEST(b.final_after <= gradient_final_position(layout, id, schedule),
                   layout.spec(id).name);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(parameters_are_final_after_their_block_the_head_after_the_readout) {
  const ModelConfig c = tiny_config("hc", 3);
  const ParameterLayout layout = build_layout(c);
  const std::vector<int> schedule = {2, -1, 0};  // block 1 skipped, blocks 0 and 2 swapped
  BOOST_TEST(gradient_final_position(layout, layout.id("final_norm"), schedule) == 3);
  BOOST_TEST(gradient_final_position(layout, layout.id("lm_head"), schedule) == 3);
  BOOST_TEST(gradient_final_position(layout, layout.id("embed"), schedule) == -1);
  BOOST_TEST(gradient_final_position(layout, layout.id("blocks.0.wq"), schedule) == 2);
  BOOST_TEST(gradient_final_position(layout, layout.id("blocks.2.ffn_hc.norm"), schedule) == 0);
  BOOST_TEST(gradient_final_position(layout, layout.id("blocks.1.w2"), schedule) == -1);
}

BOOST_AUTO_TEST_CASE(every_element_lies_in_one_bucket_launched_once_it_is_final) {
  for (const std::string arch : {"pre_ln", "hc", "mhc", "attnres_full", "moda"}) {
    BOOST_TEST_CONTEXT(arch) {
      const ModelConfig c = tiny_config(arch, 4);
      const ParameterLayout layout = build_layout(c);
      for (const std::vector<int>& schedule :
           {identity_schedule(4), std::vector<int>{3, 1, -1, 0}}) {
        for (int64_t elements : {int64_t(8), int64_t(64), int64_t(1000), int64_t(1) << 30}) {
          const auto plan = plan_gradient_buckets(layout, schedule, elements);
          check_plan(layout, schedule, plan, elements);
          if (elements == (int64_t(1) << 30)) BOOST_TEST(plan.size() == 1u);
        }
      }
      // Small buckets: the blocks' buckets start in reverse block order, the embedding's last.
      const auto plan = plan_gradient_buckets(layout, identity_schedule(4), 64);
      BOOST_TEST(plan.front().final_after == 4);  // the head, after the readout
      BOOST_TEST(plan.back().final_after == -1);
      BOOST_TEST(plan.size() > 20u);
    }
  }
}

BOOST_AUTO_TEST_CASE(bucket_sizes_come_in_whole_aligned_groups_of_fp32) {
  BOOST_TEST(bucket_elements_of(25) == 25 * 1024 * 1024 / 4);
  BOOST_TEST(bucket_elements_of(0.001) == 256);  // 1048 bytes: 262 floats, down to 8s
  BOOST_TEST(bucket_elements_of(1e-9) == ParameterLayout::kAlignment);
}

// The backward of every design, a second micro-batch added to the gradients of a first: at
// each position the loop announces, the buckets the plan starts there are copied; at the end
// they must still hold the same bits.
BOOST_AUTO_TEST_CASE(no_design_adds_to_a_gradient_after_the_plan_calls_it_final) {
  for (const DesignInfo& design : all_designs()) {
    BOOST_TEST_CONTEXT(design.name) {
      const int L = 4;
      Model<float> model(tiny_config(design.name, L));
      model.initialize(7);
      const auto plan = plan_gradient_buckets(model.layout(), identity_schedule(L), 8);
      Rng rng(3, "tokens");
      std::vector<int32_t> tokens(2 * 6);
      for (int32_t& t : tokens) t = int32_t(rng.below(11));
      model.params().zero_grads();
      model.forward_backward(tokens.data(), 2, 6, 0.1);
      std::vector<std::vector<float>> seen(plan.size());
      std::vector<int> positions;
      size_t next = 0;
      const std::span<float> grads = model.params().grads();
      model.backbone().on_gradients_final = [&](int p) {
        positions.push_back(p);
        for (; next < plan.size() && plan[next].final_after >= p; ++next)
          seen[next].assign(grads.begin() + plan[next].begin,
                            grads.begin() + plan[next].begin + plan[next].count);
      };
      for (int32_t& t : tokens) t = int32_t(rng.below(11));
      model.forward_backward(tokens.data(), 2, 6, 0.1);
      model.backbone().on_gradients_final = nullptr;
      BOOST_TEST(positions == (std::vector<int>{4, 3, 2, 1, 0}));
      int changed = 0;
      for (size_t k = 0; k < next; ++k)
        if (std::memcmp(seen[k].data(), grads.data() + plan[k].begin,
                        plan[k].count * sizeof(float)) != 0) {
          ++changed;
          BOOST_TEST_MESSAGE("bucket at " << plan[k].begin << " final after " << plan[k].final_after
                                          << " changed later");
        }
      BOOST_TEST(changed == 0);
      BOOST_TEST(next + 2 < plan.size());  // most buckets were started before the end
    }
  }
}

namespace {

// Writes down the ranges it is asked to sum.
class RecordingReducer : public GradientReducer {
 public:
  std::vector<int64_t> started;
  int finished = 0;
  void sum(Buffer<float>&) override {}
  bool overlaps() const override { return true; }
  void start_sum(Buffer<float>&, int64_t begin, int64_t) override { started.push_back(begin); }
  void finish_sums() override { ++finished; }
  std::string name() const override { return "recording"; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(buckets_start_only_in_the_armed_backward_and_all_by_the_end) {
  const ModelConfig c = tiny_config("pre_ln", 3);
  const ParameterLayout layout = build_layout(c);
  const auto plan = plan_gradient_buckets(layout, identity_schedule(3), 64);
  RecordingReducer reducer;
  Buffer<float> grads(layout.storage_size());
  BucketedReduction buckets(reducer, grads, plan);
  buckets.begin_step();
  buckets.gradients_final(3);  // an earlier micro-batch: not final yet
  BOOST_TEST(reducer.started.empty());
  buckets.arm();
  buckets.gradients_final(3);
  buckets.gradients_final(2);
  size_t expected = 0;
  while (expected < plan.size() && plan[expected].final_after >= 2) ++expected;
  BOOST_TEST(reducer.started.size() == expected);
  buckets.finish();
  BOOST_TEST(reducer.started.size() == plan.size());
  for (size_t k = 0; k < plan.size(); ++k) BOOST_TEST(reducer.started[k] == plan[k].begin);
  BOOST_TEST(reducer.finished == 1);
  // A failed rank starts whatever is left, armed or not.
  buckets.begin_step();
  buckets.start_remaining();
  BOOST_TEST(reducer.started.size() == 2 * plan.size());
}
