// The one layer loop (src/model/residual/layer_loop.hpp): the order in which it calls a design's
// steps and the observers, with a skipped block, and that every registered design, run through
// it, shows the diagnostics each depth state and each running sublayer exactly once, in order.
#define BOOST_TEST_MODULE layer_loop
#define BOOST_TEST_DYN_LINK
#include "model/residual/layer_loop.hpp"

#include <boost/test/unit_test.hpp>
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

// Writes down every step the loop asks of it.
class RecordingMixing : public LayerMixing<double> {
 public:
  std::vector<std::string> calls;

  void begin_forward(Backbone<double>&, const double*) override { calls.push_back("begin"); }
  DepthState<double> depth_state(Backbone<double>& net, int l) override {
    calls.push_back("z" + std::to_string(l));
    return {&value_, net.d()};
  }
  SublayerIO<double> sublayer_forward(Backbone<double>&, int p, bool ffn) override {
    calls.push_back(name("f", p, ffn));
    return {&value_, &value_};
  }
  void sublayer_merge(Backbone<double>&, int p, bool ffn) override {
    calls.push_back(name("merge", p, ffn));
  }
  void skip_forward(Backbone<double>&, int p) override {
    calls.push_back("skip" + std::to_string(p));
  }
  void readout_forward(Backbone<double>&, double*) override { calls.push_back("readout"); }
  void readout_backward(Backbone<double>&, const double*) override { calls.push_back("readout'"); }
  void depth_state_backward(Backbone<double>&, int l) override {
    calls.push_back("z" + std::to_string(l) + "'");
  }
  void sublayer_backward(Backbone<double>&, int p, bool ffn) override {
    calls.push_back(name("b", p, ffn));
  }
  void end_backward(Backbone<double>&, double*) override { calls.push_back("end"); }
  void save_block_input(Backbone<double>&, int p) override {
    calls.push_back("save" + std::to_string(p));
  }
  void restore_block_input(Backbone<double>&, int p) override {
    calls.push_back("restore" + std::to_string(p));
  }
  void release_block(Backbone<double>&, int p) override {
    calls.push_back("release" + std::to_string(p));
  }

 private:
  static std::string name(const char* step, int p, bool ffn) {
    return std::string(step) + std::to_string(p) + (ffn ? "f" : "a");
  }
  double value_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_loop_runs_the_steps_in_order_skips_a_block_and_observes_each_point_once) {
  Model<double> model(tiny_config("pre_ln", 3));
  Backbone<double>& net = model.backbone();
  net.skip_block(1);
  RecordingMixing mixing;
  ForwardObserver<double> observer;
  observer.depth_state = [&](int l, const double*, int64_t, int width) {
    BOOST_TEST(width == net.d());
    mixing.calls.push_back("observe z" + std::to_string(l));
  };
  observer.sublayer = [&](int k, const double*, const double*, int64_t, int) {
    mixing.calls.push_back("observe " + std::to_string(k));
  };
  net.observer = &observer;
  double x0 = 0, features = 0;  // the recording mixing reads and writes nothing
  run_layers_forward(net, mixing, &x0, &features);
  const std::vector<std::string> expected_forward = {
      "begin",   "z0",  "observe z0", "f0a",     "observe 0", "merge0a",    "f0f",    "observe 1",
      "merge0f", "z1",  "observe z1", "skip1",   "z2",        "observe z2", "f2a",    "observe 4",
      "merge2a", "f2f", "observe 5",  "merge2f", "z3",        "observe z3", "readout"};
  BOOST_TEST(mixing.calls == expected_forward, boost::test_tools::per_element());

  mixing.calls.clear();
  run_layers_backward(net, mixing, &features, &x0);
  const std::vector<std::string> expected_backward = {"readout'", "z3'", "b2f", "b2a", "z2'",
                                                      "z1'",      "b0f", "b0a", "z0'", "end"};
  BOOST_TEST(mixing.calls == expected_backward, boost::test_tools::per_element());
}

// train.recompute = blocks: a block's input is saved before its forward and its activations
// freed after it; the backward restores the input and re-runs the block (without observers)
// just before its backward, then frees it again. A skipped block does none of it.
BOOST_AUTO_TEST_CASE(under_recompute_the_loop_saves_frees_and_reruns_each_block) {
  Model<double> model(tiny_config("pre_ln", 3));
  Backbone<double>& net = model.backbone();
  net.set_recompute(Recompute::blocks);
  net.skip_block(1);
  RecordingMixing mixing;
  double x0 = 0, features = 0;
  run_layers_forward(net, mixing, &x0, &features);
  const std::vector<std::string> expected_forward = {
      "begin",    "z0",      "save0",    "f0a", "merge0a", "f0f", "merge0f",
      "release0", "z1",      "skip1",    "z2",  "save2",   "f2a", "merge2a",
      "f2f",      "merge2f", "release2", "z3",  "readout"};
  BOOST_TEST(mixing.calls == expected_forward, boost::test_tools::per_element());

  mixing.calls.clear();
  run_layers_backward(net, mixing, &features, &x0);
  const std::vector<std::string> expected_backward = {
      "readout'", "z3'",      "restore2", "f2a",      "merge2a",  "f2f", "merge2f", "b2f",
      "b2a",      "release2", "z2'",      "z1'",      "restore0", "f0a", "merge0a", "f0f",
      "merge0f",  "b0f",      "b0a",      "release0", "z0'",      "end"};
  BOOST_TEST(mixing.calls == expected_backward, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_design_shows_each_depth_state_and_running_sublayer_once_in_order) {
  const int L = 4;
  for (const DesignInfo& design : all_designs()) {
    const std::string& arch = design.name;
    BOOST_TEST_CONTEXT(arch) {
      Model<double> model(tiny_config(arch, L));
      model.initialize(5);
      Backbone<double>& net = model.backbone();
      net.skip_block(2);
      std::vector<int> states, sublayers;
      ForwardObserver<double> observer;
      observer.depth_state = [&](int l, const double*, int64_t, int) { states.push_back(l); };
      observer.sublayer = [&](int k, const double*, const double*, int64_t, int) {
        sublayers.push_back(k);
      };
      net.observer = &observer;
      std::vector<int32_t> tokens(2 * 5);
      Rng rng(3);
      for (int32_t& t : tokens) t = int32_t(rng.below(11));
      model.forward_loss(tokens.data(), 2, 5);
      BOOST_TEST(states == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
      BOOST_TEST(sublayers == (std::vector<int>{0, 1, 2, 3, 6, 7}),
                 boost::test_tools::per_element());
    }
  }
}
