// The known-answer tests of diagnostics.md ("Tests with known answers"), run in-process on
// tiny models whose blocks are set by hand.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE diagnostics known answers
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "diag//effective_rank.hpp"
#include "diag_test_support.hpp"
#include "model/residual/registry.hpp"
#include "model/residual/stream_mixing.hpp"

using namespace db;
using namespace db::diag;
using namespace db::diag::test;

BOOST_GLOBAL_FIXTURE(MpiFixture);

namespace {

bool design_registered(const std::string& name) {
  for (const DesignInfo& d : all_designs())
    if (d.name == name) return true;
  return false;
}

void check_finite_entries_equal(const DiagnosticDataset& set, double expected, double tolerance) {
  int finite = 0;
  for (double v : set.values)
    if (std::isfinite(v)) {
      ++finite;
      BOOST_TEST(std::fabs(v - expected) <= tolerance, set.name << ": " << v << " != " << expected);
    }
  BOOST_TEST(finite > 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(identity_blocks_have_zero_angular_causal_and_permutation_scores) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  for (int b = 0; b < 4; ++b) make_identity_block(h.model, b);
  auto angular = h.run_diagnostic("angular_distance");
  for (const char* name : {"angular_distance", "angular_distance_last_token"}) {
    const DiagnosticDataset& d = angular.at(name);
    BOOST_TEST(d.shape == std::vector<int64_t>({5, 5}), name);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        const double v = d.values[i * 5 + j];
        if (j < i)
          BOOST_TEST(std::isnan(v));
        else  // identical states: the cosine rounds to 1 within fp32 unit-vector error
          BOOST_TEST(std::fabs(v) < 2e-3, name << "[" << i << "][" << j << "] = " << v);
      }
  }
  auto causal = h.run_diagnostic("causal_score").at("causal_score");
  for (int s = 0; s < 4; ++s)
    for (int l = 0; l < 4; ++l)
      if (l <= s)
        BOOST_TEST(std::isnan(causal.values[s * 4 + l]));
      else
        BOOST_TEST(causal.values[s * 4 + l] == 0.0);
  auto permutation = h.run_diagnostic("permutation_score").at("permutation_score");
  check_finite_entries_equal(permutation, 0.0, 0.0);
  BOOST_TEST(std::get<double>(permutation.attributes.at("late_share_above_0.15")) == 0.0);
}

BOOST_AUTO_TEST_CASE(swapping_two_identical_blocks_changes_nothing) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  copy_block(h.model, 1, 3);
  auto p = h.run_diagnostic("permutation_score").at("permutation_score");
  BOOST_TEST(p.values[1 * 4 + 3] == 0.0);
  BOOST_TEST(p.values[0 * 4 + 1] > 0.0);  // a real swap does change the loss
}

BOOST_AUTO_TEST_CASE(skipping_a_block_whose_update_is_zero_changes_nothing) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  make_identity_block(h.model, 1);
  auto pruning = h.run_diagnostic("pruning").at("pruning_loss_delta");
  BOOST_TEST(pruning.values[1] == 0.0);
  BOOST_TEST(pruning.values[0] != 0.0);
  auto causal = h.run_diagnostic("causal_score").at("causal_score");
  BOOST_TEST(causal.values[1 * 4 + 2] == 0.0);
  BOOST_TEST(causal.values[1 * 4 + 3] == 0.0);
  BOOST_TEST(causal.values[0 * 4 + 2] > 0.0);
}

BOOST_AUTO_TEST_CASE(pre_ln_path_weights_are_all_one) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  auto out = h.run_diagnostic("path_weights");
  const DiagnosticDataset& w = out.at("path_weights");
  BOOST_TEST(w.shape == std::vector<int64_t>({9, 9}));
  check_finite_entries_equal(w, 1.0, 0.0);
  BOOST_TEST(std::isnan(w.values[1 * 9 + 0]));  // sublayer 0's output does not reach its input
  BOOST_TEST(!out.count("effective_rank"));     // a single stream has no stream maps
  BOOST_TEST(!out.count("dead_segment"));
}

BOOST_AUTO_TEST_CASE(logitlens_kl_at_depth_L_is_zero_where_the_readout_is_the_output) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  auto out = h.run_diagnostic("logitlens");
  BOOST_TEST(out.at("logitlens_kl").values[4] == 0.0);
  BOOST_TEST(out.at("logitlens_kl_reverse").values[4] == 0.0);
  BOOST_TEST(out.at("logitlens_top5_overlap").values[4] == 1.0);
  BOOST_TEST(out.at("logitlens_kl").values[0] > 0.0);
}

BOOST_AUTO_TEST_CASE(hc_at_init_has_unit_path_weights_and_full_effective_rank) {
  if (!design_registered("hc")) {
    BOOST_TEST_MESSAGE("skipped: the 'hc' design is not registered in this build");
    return;
  }
  TempDir dir;
  Harness h(tiny_config("hc"), random_tokens(dir, 4000));
  auto out = h.run_diagnostic("path_weights");
  check_finite_entries_equal(out.at("path_weights"), 1.0, 1e-5);
  const int n = dynamic_cast<const StreamMixingSource&>(h.model.design()).stream_mixing().n;
  check_finite_entries_equal(out.at("effective_rank"), double(n), 1e-6);
}

BOOST_AUTO_TEST_CASE(effective_rank_of_known_matrices) {
  const int n = 4;
  std::vector<double> identity(16, 0.0), uniform(16, 0.25), single(16, 0.0);
  for (int i = 0; i < n; ++i) identity[i * n + i] = 1.0;
  single[0] = 3.0;
  BOOST_TEST(std::fabs(effective_rank(identity, n) - 4.0) < 1e-12);
  BOOST_TEST(std::fabs(effective_rank(uniform, n) - 1.0) < 1e-12);  // mHC with H_res = J/n
  BOOST_TEST(std::fabs(effective_rank(single, n) - 1.0) < 1e-12);
  // diag(3, 1): p = (3/4, 1/4), erank = exp(−(.75 ln .75 + .25 ln .25)), rotated to be non-trivial.
  const double c = std::cos(0.3), s = std::sin(0.3);
  std::vector<double> rotated = {3 * c, -3 * s, 1 * s, 1 * c};
  const double expected = std::exp(-(0.75 * std::log(0.75) + 0.25 * std::log(0.25)));
  BOOST_TEST(std::fabs(effective_rank(rotated, 2) - expected) < 1e-12);
  const std::vector<double> sigma = singular_values(rotated, 2);
  BOOST_TEST(std::fabs(sigma[0] - 3.0) < 1e-12);
  BOOST_TEST(std::fabs(sigma[1] - 1.0) < 1e-12);
  // Spans of identities compose to identities (HC at init): every span has rank n; a span that
  // meets J/n has rank 1.
  std::vector<const double*> maps = {identity.data(), identity.data(), uniform.data()};
  const std::vector<double> spans = span_effective_ranks(maps, n);
  BOOST_TEST(std::fabs(spans[0 * 3 + 1] - 4.0) < 1e-12);
  BOOST_TEST(std::fabs(spans[0 * 3 + 2] - 1.0) < 1e-12);
  BOOST_TEST(std::isnan(spans[2 * 3 + 0]));
}

BOOST_AUTO_TEST_CASE(target_score_equals_the_lm_loss_of_the_same_tokens) {
  TempDir dir;
  Harness h(tiny_config(), random_tokens(dir, 4000));
  const std::string prompt = "ab", target = "cdefg";
  const TargetScore s = score_target(h.model, *h.tokenizer, prompt, target, 64);
  BOOST_TEST(s.tokens == 5);
  BOOST_TEST(!s.truncated);
  // Loss of "abcdefg" minus the loss of predicting 'b' from "a": the target's summed NLL.
  std::vector<int32_t> all = {'a', 'b', 'c', 'd', 'e', 'f', 'g'}, head = {'a', 'b'};
  const double expected =
      h.model.forward_loss(all.data(), 1, 7) - h.model.forward_loss(head.data(), 1, 2);
  BOOST_TEST(std::fabs(s.nll - expected) < 1e-4 * std::fabs(expected));
  const TargetScore cut = score_target(h.model, *h.tokenizer, prompt, target, 4);
  BOOST_TEST(cut.truncated);
  BOOST_TEST(cut.tokens == 3);  // "defg" kept: 'd' has no predecessor left
}
