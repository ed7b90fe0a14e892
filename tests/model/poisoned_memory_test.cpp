// Reads before writes (core/memory_poison.hpp): a model whose new host buffers start as NaN must
// give the bits of one whose buffers start as whatever the allocator hands out. On a GPU the
// stream-ordered pool returns blocks with old contents, so a buffer read before its first write
// would corrupt the step there while passing every CPU test on zero pages. For every registered
// design (and the options that change its state), in float and double, with the fused kernels on
// and off, and in float with bf16 activation storage: the loss and every gradient of two steps,
// and a forward-only loss.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE poisoned_memory
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/memory_poison.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "support/design_variants.hpp"
#include "support/model_setup.hpp"

using namespace db;

namespace {

using test::Variant;

template <class T>
struct Result {
  std::vector<double> losses;  // two steps, then a forward alone
  std::vector<T> grads;
  bool finite() const {
    for (double x : losses)
      if (!std::isfinite(x)) return false;
    for (T x : grads)
      if (!std::isfinite(double(x))) return false;
    return true;
  }
  bool same_bits(const Result& o) const {
    return losses.size() == o.losses.size() && grads.size() == o.grads.size() &&
           std::memcmp(losses.data(), o.losses.data(), losses.size() * sizeof(double)) == 0 &&
           std::memcmp(grads.data(), o.grads.data(), grads.size() * sizeof(T)) == 0;
  }
};

// Two training steps (the second reuses the first's buffers) and a forward-only loss of a model
// built while poisoning is `poisoned`; parameters moved off their init so that zero-initialised
// mixers carry gradients.
template <class T>
Result<T> run(const ModelConfig& c, const OpsOptions& options, bool poisoned) {
  memory::set_poison_new_host_memory(poisoned);
  Result<T> r;
  {
    Model<T> model(c, find_backend("cpu"), options);
    test::initialize_off_init(model);
    const int B = 2, T_len = 7;
    std::vector<int32_t> tokens(B * T_len);
    Rng rng(3);
    for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
    for (int step = 0; step < 2; ++step) {
      model.params().zero_grads();
      r.losses.push_back(model.forward_backward(tokens.data(), B, T_len, 0.5));
    }
    r.losses.push_back(model.forward_loss(tokens.data(), B, T_len));
    r.grads = model.params().grad_buffer().to_host();
  }
  memory::set_poison_new_host_memory(false);
  return r;
}

// A read of a poisoned value turns the results into NaN (finite() fails); the clean run may
// itself read what an earlier poisoned run left in the heap, so the bits are compared too.
template <class T>
void check(const OpsOptions& options, const char* what) {
  for (const Variant& v : test::state_changing_variants()) {
    BOOST_TEST_CONTEXT(v.name() << ", " << what) {
      const ModelConfig c = v.small_config();
      const Result<T> clean = run<T>(c, options, false);
      const Result<T> poisoned = run<T>(c, options, true);
      BOOST_TEST(poisoned.finite());
      BOOST_TEST(clean.same_bits(poisoned));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(poisoned_buffers_give_the_same_bits_in_float_and_double) {
  for (const bool fused : {true, false}) {
    const OpsOptions options{.fused_kernels = fused};
    check<float>(options, fused ? "float, fused" : "float, unfused");
    check<double>(options, fused ? "double, fused" : "double, unfused");
  }
}

BOOST_AUTO_TEST_CASE(poisoned_buffers_give_the_same_bits_with_bf16_storage) {
  check<float>(OpsOptions{.activation_dtype = ActivationDtype::bf16}, "float, bf16 storage");
}

BOOST_AUTO_TEST_CASE(poisoning_fills_new_host_buffers_with_nan) {
  memory::set_poison_new_host_memory(true);
  Buffer<float> b(5);
  memory::set_poison_new_host_memory(false);
  const std::vector<float> v = b.to_host();
  for (float x : v) BOOST_TEST(std::isnan(x));
}
