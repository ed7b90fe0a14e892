// The AttnRes depth softmax functors (depth_softmax.hpp: Forward, OnePassForward, Backward, and
// the gathered backward's ConsumerBackward and GatherBackward) on an emulated 32-lane warp
// (support/emulated_warp.hpp: the GPU's lane striding, per-lane register arrays of D/32 values and
// logits of source i kept by lane i mod 32, the warp-sum butterfly, for_each_row_sum_lanes' chunks)
// against their run on the host's one lane, dispatched as depth_softmax_forward and the backward
// entry points dispatch them (source capacity 16, 64 or 256; the one-pass and gathered functors up
// to kMaxOnePassWidth, the two passes beyond), in float and double:
// - widths below, at and above 32, not multiples of 32, at and just above each row capacity (1024,
//   and 2048 in float), for 3 sources; 1, 31, 32, 33, 64 and 65 sources (lane i mod 32 keeps
//   logit i; the three capacities) at d = 33; and more rows than a GPU warp's chunk of the
//   row sums;
// - every result agrees to rounding (support/lane_agreement.hpp reorder_tolerance over d), a
//   second run on the warp gives the same bits, and on the warp as on the host the one-pass
//   forward's rstd is the two passes' bit for bit (the same sums in the same order), and rows
//   wider than the one-pass capacity get the two passes' results;
// - the same with the sources and the mix's output gradient dh stored in bf16 (train.state_dtype
//   = bf16: StateValues' narrow form, widened on every load), as the GPU runs them.
// Built without contraction of a·b + c (tests.cmake).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE depth_softmax_warp
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "model/residual/depth_softmax.hpp"
#include "support/bf16_values.hpp"
#include "support/gradcheck.hpp"
#include "support/lane_agreement.hpp"

// Built with DB_EMULATE_DEVICE_LOOPS (tests.cmake): the register-array loops in the GPU's form.
static_assert(DB_DEVICE_LOOPS, "the warp tests run the GPU's loop form");

using namespace db;
using namespace db::test;
using namespace db::depth_softmax_kernels;

namespace {

// The sources and dh in T; with bf16_state also rounded to bf16, which the functors then read.
template <class T>
struct Inputs {
  DepthMixShape shape;
  std::vector<std::vector<T>> sources;
  std::vector<T> query, key_gain, dh;
  std::vector<std::vector<bfloat16>> narrow_sources;
  std::vector<bfloat16> narrow_dh;
  Inputs(int64_t rows, int d, int m, bool bf16_state = false) : shape{rows, d, m, 1e-5} {
    for (int i = 0; i < m; ++i) sources.push_back(random_vector<T>(rows * d, 100 + i));
    query = random_vector<T>(d, 1, 0.3);
    key_gain = random_vector<T>(d, 2, 0.2);
    for (T& g : key_gain) g += T(1);
    dh = random_vector<T>(rows * d, 3);
    if (!bf16_state) return;
    for (std::vector<T>& v : sources) narrow_sources.push_back(to_bf16(v));
    narrow_dh = to_bf16(dh);
  }
  std::vector<StateValues<T>> source_pointers() const {
    std::vector<StateValues<T>> out;
    for (size_t i = 0; i < sources.size(); ++i)
      out.push_back(narrow_sources.empty() ? StateValues<T>(sources[i].data())
                                           : StateValues<T>(nullptr, narrow_sources[i].data()));
    return out;
  }
  StateValues<T> dh_values() const {
    return narrow_dh.empty() ? StateValues<T>(dh.data()) : StateValues<T>(nullptr, narrow_dh.data());
  }
};

// depth_softmax_forward's dispatch, on `launch`: h, weights, rstd.
template <class T, class Rows>
Results<T> forward_results(const Inputs<T>& in, bool one_pass, const Rows& launch) {
  const DepthMixShape& s = in.shape;
  std::vector<T> h(s.rows * s.d), weights(s.rows * s.sources), rstd(s.rows * s.sources);
  with_list_capacity(s.sources, "sources", [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    const PointerList<StateValues<T>, M> list(in.source_pointers());
    const bool ran_one_pass =
        one_pass && with_width_capacity<T>(s.d, [&](auto width) {
          constexpr int D = decltype(width)::value;
          launch.lanes(s.rows, OnePassForward<T, M, D>{h.data(), weights.data(), rstd.data(), list,
                                                       in.query.data(), in.key_gain.data(), s.d,
                                                       s.sources, s.eps});
        });
    if (!ran_one_pass)
      launch.lanes(s.rows,
                   Forward<T, M>{h.data(), weights.data(), rstd.data(), list, in.query.data(),
                                 in.key_gain.data(), s.d, s.sources, s.eps});
  });
  const std::string name = one_pass ? "one-pass forward " : "two-pass forward ";
  return {{name + "h", h}, {name + "weights", weights}, {name + "rstd", rstd}};
}

// The backward on `launch`, from the forward's results `fwd` (h, weights, rstd): the source
// gradients, dquery and dkey_gain (added to random values). Two passes: depth_softmax_backward's
// Backward, every source's gradient added. Gathered (train.fused_kernels, where the row fits the
// registers): ConsumerBackward adds the last source's share itself (as Block AttnRes's partial
// sum) and keeps the (w, dlogit) pairs of the others, whose gradients GatherBackward then
// writes, source 0's from this consumer and from one that reads it directly (no weight, as
// sublayer 0 reads the embedding).
template <class T, class Rows>
Results<T> backward_results(const Inputs<T>& in, const Results<T>& fwd, bool one_pass,
                            const Rows& launch) {
  const DepthMixShape& s = in.shape;
  std::vector<std::vector<T>> dsources;
  for (int i = 0; i < s.sources; ++i) dsources.push_back(random_vector<T>(s.rows * s.d, 200 + i));
  std::vector<T> dquery = random_vector<T>(s.d, 4), dkey_gain = random_vector<T>(s.d, 5);
  std::vector<T> dlogits(s.rows * s.sources);
  const std::vector<T> direct_dh = random_vector<T>(s.rows * s.d, 6);
  const T *h = fwd[0].values.data(), *weights = fwd[1].values.data(), *rstd = fwd[2].values.data();
  SumTargets<T> targets;
  targets.add(dquery.data(), s.d).add(dkey_gain.data(), s.d);
  const bool gathered = one_pass && depth_softmax_gathers<T>(s.d);
  std::vector<T*> dsource_pointers;
  for (int i = 0; i < s.sources; ++i)
    dsource_pointers.push_back(!gathered || i == s.sources - 1 ? dsources[i].data() : nullptr);
  with_list_capacity(s.sources, "sources", [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    const PointerList<T*, M> grads(dsource_pointers);
    const PointerList<StateValues<T>, M> values(in.source_pointers());
    if (!gathered) {
      launch.sum_lanes(s.rows, targets,
                       Backward<T, M>{grads, values, in.dh_values(), weights, rstd, in.query.data(),
                                      in.key_gain.data(), s.d, s.sources});
      return;
    }
    with_width_capacity<T>(s.d, [&](auto width) {
      constexpr int D = decltype(width)::value;
      launch.sum_lanes(
          s.rows, targets,
          ConsumerBackward<T, M, D>{grads, values, dlogits.data(), in.dh_values(), h, weights, rstd,
                                    in.query.data(), in.key_gain.data(), s.d, s.sources});
      for (int i = 0; i + 1 < s.sources; ++i) {
        std::vector<DepthGatherTerm<T>> consumers = {{in.dh_values(), weights + i, dlogits.data() + i,
                                                      in.query.data(), in.key_gain.data(),
                                                      s.sources}};
        if (i == 0) consumers.push_back({direct_dh.data(), nullptr, nullptr, nullptr, nullptr, 0});
        const int n = int(consumers.size());
        launch.lanes(s.rows, GatherBackward<T, 16, D>{
                                 dsources[i].data(), in.source_pointers()[i],
                                 PointerList<DepthGatherTerm<T>, 16>(consumers), s.d, n, s.eps});
      }
    });
  });
  std::vector<T> all_dsources;
  for (const std::vector<T>& g : dsources)
    all_dsources.insert(all_dsources.end(), g.begin(), g.end());
  const std::string name = gathered ? "gathered backward " : "two-pass backward ";
  return {{name + "dsources", all_dsources},
          {name + "dquery", dquery},
          {name + "dkey_gain", dkey_gain},
          {name + "dlogits", dlogits}};
}

template <class T>
void check_depth_softmax(int64_t rows, int d, int m, bool bf16_state = false) {
  const Inputs<T> in(rows, d, m, bf16_state);
  const std::string shape = std::to_string(sizeof(T) * 8) + "-bit, rows " + std::to_string(rows) +
                            " d " + std::to_string(d) + " sources " + std::to_string(m) +
                            (d > kMaxOnePassWidth<T> ? " (one pass falls back to two)" : "") +
                            (bf16_state ? ", bf16 sources and dh" : "");
  // The longest sums run over a row's d columns.
  const double tolerance = reorder_tolerance<T, double>(d);
  Results<T> warp_forward[2];  // two passes, one pass
  for (bool one_pass : {false, true}) {
    const Results<T> fwd = forward_results(in, one_pass, HostRows{});
    warp_forward[one_pass] = check_on_warp<T>(shape, tolerance, [&](const auto& launch) {
      return forward_results(in, one_pass, launch);
    });
    check_on_warp<T>(shape, tolerance, [&](const auto& launch) {
      return backward_results(in, fwd, one_pass, launch);
    });
  }
  const Results<T>&two = warp_forward[0], &one = warp_forward[1];
  BOOST_TEST(same_bits(one[2].values, two[2].values),
             "one-pass rstd is the two passes' on the warp, " << shape);
  if (d > kMaxOnePassWidth<T>)  // the one-pass call ran the two passes
    BOOST_TEST((same_bits(one[0].values, two[0].values) && same_bits(one[1].values, two[1].values)),
               "beyond the one-pass capacity: the two passes' bits, " << shape);
}

}  // namespace

BOOST_AUTO_TEST_CASE(depth_softmax_on_a_warp_agrees_with_one_lane_across_widths) {
  for (int d : {1, 31, 32, 33, 100, 1024, 1025, 2048, 2049}) {
    check_depth_softmax<float>(2, d, 3);
    if (d <= 1025) check_depth_softmax<double>(2, d, 3);
  }
  // Rows over more than one chunk of the GPU's row sums (kRowsPerWarpChunk).
  check_depth_softmax<float>(kRowsPerWarpChunk + 1, 33, 3);
  check_depth_softmax<double>(kRowsPerWarpChunk + 1, 33, 3);
}

BOOST_AUTO_TEST_CASE(depth_softmax_on_a_warp_agrees_with_one_lane_across_source_counts) {
  for (int m : {1, 31, 32, 33, 64, 65}) {
    check_depth_softmax<float>(2, 33, m);
    check_depth_softmax<double>(2, 33, m);
  }
}

BOOST_AUTO_TEST_CASE(depth_softmax_on_a_warp_reads_bf16_sources_and_gradients) {
  for (int d : {33, 1024, 2049})
    for (int m : {3, 33}) {
      check_depth_softmax<float>(2, d, m, true);
      if (d <= 1024) check_depth_softmax<double>(2, d, m, true);
    }
}
