// The AttnRes depth softmax in one read of its sources (depth_softmax.hpp OnePassForward, and
// the gathered backward ConsumerBackward + GatherBackward, train.fused_kernels) against the two
// passes they replace (Forward, Backward), in float and double, for 1, 2, 17 and 65 sources (the
// three source capacities) and widths below, at and above a lane's columns, none a multiple of 32
// but the capacity itself:
// - rstd and the logits are the same sums in the same order (the same bits where the compiler
//   contracts a·b + c alike in both loops); h and the weights differ by rounding only (the
//   online softmax sums unnormalised, rescaled terms);
// - the two-pass backward gives the same gradients to rounding whichever forward fed it, and so
//   does the gathered backward (tolerances below);
// - several consumers sharing sources (and the embedding read directly, and a source with one
//   consumer that adds its share itself, as Block AttnRes's partial sum): each source's gradient
//   gathered from all its consumers is the sum the two-pass backwards add, to rounding;
// - rows wider than the one-pass capacity (kMaxOnePassWidth) run the two passes: the same bits;
// - sources stored in bf16 (train.state_dtype = bf16) give the results of their values held in
//   T, to the compiler's contractions.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE depth_softmax
#include "model/residual/depth_softmax.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/bfloat16.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

constexpr int64_t kRows = 5;

template <class T>
struct Inputs {
  DepthMixShape shape;
  std::vector<std::vector<T>> sources;
  std::vector<T> query, key_gain, dh;
  // Where set, the sources as the consumers read them: stored in bf16 (train.state_dtype = bf16).
  std::vector<std::vector<bfloat16>> narrow_sources;
  std::vector<StateValues<T>> pointers() const {
    std::vector<StateValues<T>> p;
    for (const std::vector<T>& s : sources) p.push_back(s.data());
    for (size_t i = 0; i < narrow_sources.size(); ++i) p[i] = {nullptr, narrow_sources[i].data()};
    return p;
  }
};

// Logits of a few units: the softmax is neither flat nor one-hot, and the largest logit so far
// changes a few times along the sources.
template <class T>
Inputs<T> make_inputs(int m, int d) {
  Inputs<T> in{{kRows, d, m, 1e-6}, {}, {}, {}, {}, {}};
  for (int i = 0; i < m; ++i) in.sources.push_back(test::random_vector<T>(kRows * d, 30 + i));
  in.query = test::random_vector<T>(d, 20, 3.0 / std::sqrt(double(d)));
  in.key_gain = test::random_vector<T>(d, 21, 0.3);
  for (T& g : in.key_gain) g += T(1);
  in.dh = test::random_vector<T>(kRows * d, 22);
  return in;
}

template <class T>
struct Outputs {
  std::vector<T> h, weights, rstd, dquery, dkey_gain;
  std::vector<std::vector<T>> dsources;
};

// The forward, then the backward it feeds: two passes, or gathered (each source's gradient from
// its one consumer's weight and dlogit).
template <class T>
Outputs<T> run(const Inputs<T>& in, bool one_pass_forward, bool gathered_backward) {
  const DepthMixShape& s = in.shape;
  Outputs<T> out{std::vector<T>(kRows * s.d),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(s.d),
                 std::vector<T>(s.d),
                 {}};
  depth_softmax_forward(MemorySpace::host, one_pass_forward, out.h.data(), out.weights.data(),
                        out.rstd.data(), in.pointers(), in.query.data(), in.key_gain.data(), s);
  std::vector<T*> dsources;
  for (int i = 0; i < s.sources; ++i) out.dsources.emplace_back(kRows * s.d, T(0));
  for (std::vector<T>& ds : out.dsources) dsources.push_back(ds.data());
  if (!gathered_backward) {
    depth_softmax_backward<T>(MemorySpace::host, dsources, out.dquery.data(), out.dkey_gain.data(),
                              in.dh.data(), in.pointers(), out.weights.data(), out.rstd.data(),
                              in.query.data(), in.key_gain.data(), s);
    return out;
  }
  std::vector<T> dlogits(kRows * s.sources);
  depth_softmax_consumer_backward<T>(MemorySpace::host, std::vector<T*>(s.sources, nullptr),
                                     dlogits.data(), out.dquery.data(), out.dkey_gain.data(),
                                     in.dh.data(), out.h.data(), in.pointers(), out.weights.data(),
                                     out.rstd.data(), in.query.data(), in.key_gain.data(), s);
  for (int i = 0; i < s.sources; ++i)
    depth_softmax_gather<T>(MemorySpace::host, dsources[i], in.pointers()[i],
                            {{in.dh.data(), out.weights.data() + i, dlogits.data() + i,
                              in.query.data(), in.key_gain.data(), s.sources}},
                            kRows, s.d, s.eps);
  return out;
}

template <class T>
double difference(const std::vector<T>& a, const std::vector<T>& b) {
  return test::max_relative_difference(a.data(), b);
}

// The largest difference of any gradient over the largest gradient: one scale for the mix's
// gradients, since with one source the query and key-gain gradients are zero (its weight is 1
// whatever the logit), which rounding leaves at ±10⁻¹⁷ or exactly 0.
template <class T>
double gradient_difference(const Outputs<T>& a, const Outputs<T>& b) {
  std::vector<T> all_a = a.dquery, all_b = b.dquery;
  all_a.insert(all_a.end(), a.dkey_gain.begin(), a.dkey_gain.end());
  all_b.insert(all_b.end(), b.dkey_gain.begin(), b.dkey_gain.end());
  for (size_t i = 0; i < a.dsources.size(); ++i) {
    all_a.insert(all_a.end(), a.dsources[i].begin(), a.dsources[i].end());
    all_b.insert(all_b.end(), b.dsources[i].begin(), b.dsources[i].end());
  }
  return difference(all_a, all_b);
}

template <class T>
void check_one_pass_against_two(double tolerance, double gradient_tolerance) {
  double worst_h = 0, worst_weights = 0, worst_rstd = 0, worst_backward = 0, worst_both = 0;
  for (int m : {1, 2, 17, 65})
    for (int d : {3, 33, 100, 1024, 1025, 1999}) {
      if (d > kMaxOnePassWidth<T>) continue;
      BOOST_TEST_CONTEXT("m = " << m << ", d = " << d) {
        const Inputs<T> in = make_inputs<T>(m, d);
        const Outputs<T> two = run(in, false, false);
        const Outputs<T> one_forward = run(in, true, false), one = run(in, true, true);
        const double h = difference(one.h, two.h), weights = difference(one.weights, two.weights),
                     rstd = difference(one.rstd, two.rstd);
        // The two-pass backward fed by either forward, and both in one pass.
        const double backward = gradient_difference(one_forward, two),
                     both = gradient_difference(one, two);
        BOOST_TEST(h <= tolerance);
        BOOST_TEST(weights <= tolerance);
        BOOST_TEST(rstd <= tolerance);
        BOOST_TEST(backward <= gradient_tolerance);
        BOOST_TEST(both <= gradient_tolerance);
        worst_h = std::max(worst_h, h);
        worst_weights = std::max(worst_weights, weights);
        worst_rstd = std::max(worst_rstd, rstd);
        worst_backward = std::max(worst_backward, backward);
        worst_both = std::max(worst_both, both);
      }
    }
  BOOST_TEST_MESSAGE(sizeof(T) * 8 << "-bit, one pass against two, largest relative difference: h "
                                   << worst_h << ", weights " << worst_weights << ", rstd "
                                   << worst_rstd << "; gradients, two-pass backward "
                                   << worst_backward << ", gathered backward " << worst_both);
}

// Consumers of m = 1, 2, 17, 65 and 30 sources of one pool (each the first m), each with its own
// query, key gain and dh; the embedding (source 0) is also read directly by a sublayer (weight
// 1, dh of its own); the last consumer's last source is its own (a partial sum: added by the
// consumer, not gathered). The two-pass backward of every consumer adds into the sources'
// gradients; the gathered one keeps dlogits and then writes each shared source's gradient once.
template <class T>
double gathered_against_scattered(int d) {
  const std::vector<int> mixes = {1, 2, 17, 65, 30};
  const int pool = 65;
  std::vector<std::vector<T>> values;
  for (int i = 0; i < pool + 1; ++i) values.push_back(test::random_vector<T>(kRows * d, 60 + i));
  const std::vector<T> direct_dh = test::random_vector<T>(kRows * d, 59);
  std::vector<std::vector<T>> scattered(pool + 1, std::vector<T>(kRows * d, T(0)));
  std::vector<std::vector<T>> gathered = scattered;
  std::vector<Inputs<T>> consumers;
  std::vector<std::vector<T>> h, weights, rstd, dlogits;
  std::vector<T> dparams_scattered, dparams_gathered;
  for (size_t c = 0; c < mixes.size(); ++c) {
    const int m = mixes[c];
    Inputs<T> in = make_inputs<T>(m, d);
    in.sources.clear();
    for (int i = 0; i < m; ++i) in.sources.push_back(values[i]);
    if (c + 1 == mixes.size()) in.sources.back() = values[pool];  // its own partial sum
    in.query = test::random_vector<T>(d, 70 + c, 3.0 / std::sqrt(double(d)));
    in.dh = test::random_vector<T>(kRows * d, 80 + c);
    const DepthMixShape& s = in.shape;
    h.emplace_back(kRows * d);
    weights.emplace_back(kRows * m);
    rstd.emplace_back(kRows * m);
    dlogits.emplace_back(kRows * m);
    depth_softmax_forward(MemorySpace::host, true, h[c].data(), weights[c].data(), rstd[c].data(),
                          in.pointers(), in.query.data(), in.key_gain.data(), s);
    std::vector<T*> scatter, gather(m, nullptr);
    for (int i = 0; i < m; ++i) scatter.push_back(scattered[i].data());
    if (c + 1 == mixes.size()) {
      scatter.back() = scattered[pool].data();
      gather.back() = gathered[pool].data();
    }
    std::vector<T> dq(d), dg(d), dq_gathered(d), dg_gathered(d);
    depth_softmax_backward<T>(MemorySpace::host, scatter, dq.data(), dg.data(), in.dh.data(),
                              in.pointers(), weights[c].data(), rstd[c].data(), in.query.data(),
                              in.key_gain.data(), s);
    depth_softmax_consumer_backward<T>(MemorySpace::host, gather, dlogits[c].data(),
                                       dq_gathered.data(), dg_gathered.data(), in.dh.data(),
                                       h[c].data(), in.pointers(), weights[c].data(),
                                       rstd[c].data(), in.query.data(), in.key_gain.data(), s);
    for (const std::vector<T>* p : {&dq, &dg})
      dparams_scattered.insert(dparams_scattered.end(), p->begin(), p->end());
    for (const std::vector<T>* p : {&dq_gathered, &dg_gathered})
      dparams_gathered.insert(dparams_gathered.end(), p->begin(), p->end());
    consumers.push_back(std::move(in));
  }
  for (size_t k = 0; k < kRows * size_t(d); ++k) scattered[0][k] += direct_dh[k];
  for (int i = 0; i < pool; ++i) {
    std::vector<DepthGatherTerm<T>> list;
    for (size_t c = mixes.size(); c-- > 0;)
      if (i < int(consumers[c].sources.size()) && consumers[c].sources[i] == values[i])
        list.push_back({consumers[c].dh.data(), weights[c].data() + i, dlogits[c].data() + i,
                        consumers[c].query.data(), consumers[c].key_gain.data(), mixes[c]});
    if (i == 0) list.push_back({direct_dh.data(), nullptr, nullptr, nullptr, nullptr, 0});
    depth_softmax_gather<T>(MemorySpace::host, gathered[i].data(), values[i].data(), list, kRows, d,
                            1e-6);
  }
  std::vector<T> all_scattered = dparams_scattered, all_gathered = dparams_gathered;
  for (int i = 0; i <= pool; ++i) {
    all_scattered.insert(all_scattered.end(), scattered[i].begin(), scattered[i].end());
    all_gathered.insert(all_gathered.end(), gathered[i].begin(), gathered[i].end());
  }
  return difference(all_gathered, all_scattered);
}

template <class T>
void check_gathered_against_scattered(double tolerance) {
  double worst = 0;
  for (int d : {33, 100, 1025}) {
    if (d > kMaxOnePassWidth<T>) continue;
    BOOST_TEST_CONTEXT("d = " << d) {
      const double difference = gathered_against_scattered<T>(d);
      BOOST_TEST(difference <= tolerance);
      worst = std::max(worst, difference);
    }
  }
  BOOST_TEST_MESSAGE(sizeof(T) * 8 << "-bit, five consumers gathered against scattered, largest "
                                      "relative difference: "
                                   << worst);
}

template <class T>
void check_wide_rows_run_two_passes() {
  const Inputs<T> in = make_inputs<T>(17, kMaxOnePassWidth<T> + 1);
  const Outputs<T> one = run(in, true, false), two = run(in, false, false);
  BOOST_TEST(one.h == two.h);
  BOOST_TEST(one.weights == two.weights);
  BOOST_TEST(one.rstd == two.rstd);
  BOOST_TEST(one.dsources == two.dsources);
  BOOST_TEST(one.dquery == two.dquery);
  BOOST_TEST(one.dkey_gain == two.dkey_gain);
}

// Sources stored in bf16 (StateValues' narrow form) against the same values held in T, in every
// form of the forward and backward: a bf16 value widens exactly, so they differ only where the
// compiler contracts a·b + c into a fused multiply-add differently for the two kinds of load
// (measured: the same bits in float; 9·10⁻¹⁶ in double, in the two-pass forward only).
template <class T>
void check_bf16_sources_read_as_their_values(double tolerance) {
  double worst = 0;
  for (int m : {2, 17})
    for (int d : {33, 100}) {
      BOOST_TEST_CONTEXT("m = " << m << ", d = " << d) {
        Inputs<T> held = make_inputs<T>(m, d);
        for (std::vector<T>& source : held.sources) {
          std::vector<bfloat16> narrow;
          for (T& v : source) {
            narrow.push_back(to_bfloat16(float(v)));
            v = T(to_float(narrow.back()));
          }
          held.narrow_sources.push_back(std::move(narrow));
        }
        Inputs<T> wide = held;
        wide.narrow_sources.clear();
        for (auto [one_pass, gathered] : {std::pair{false, false}, {true, false}, {true, true}}) {
          const Outputs<T> a = run(held, one_pass, gathered), b = run(wide, one_pass, gathered);
          for (double diff : {difference(a.h, b.h), difference(a.weights, b.weights),
                              difference(a.rstd, b.rstd), gradient_difference(a, b)}) {
            BOOST_TEST(diff <= tolerance);
            worst = std::max(worst, diff);
          }
        }
      }
    }
  BOOST_TEST_MESSAGE(sizeof(T) * 8 << "-bit, bf16 sources against their values held in T, "
                                      "largest relative difference: "
                                   << worst);
}

}  // namespace

// Tolerances, relative to the largest value: the forward 2⁻¹⁹ in float, 2⁻⁴⁶ in double (16 and
// 64 units of the last place; measured: h 5.3·10⁻⁷ and 9·10⁻¹⁶, the weights 0 and 10⁻¹⁵).
// The gradients 2⁻¹⁶ and 2⁻⁴⁰: the gathered backward takes Σ_k w_k·dw_k as dh·h, h rounded to T,
// and the query and key-gain gradients add terms w_i·(dw_i − Σ_k w_k·dw_k) that partly cancel,
// which magnifies that rounding (measured: 2.6·10⁻⁶ in float, 8·10⁻¹⁵ in double; up to
// 3.6·10⁻¹⁴ with other loop forms, as the compiler's contractions into fused multiply-adds
// change). Five consumers gathered against their scatters: measured 1.9·10⁻⁷ and 1.4·10⁻¹⁵.
BOOST_AUTO_TEST_CASE(one_pass_forward_and_backward_match_two_passes_to_rounding_in_float) {
  check_one_pass_against_two<float>(std::ldexp(1.0, -19), std::ldexp(1.0, -16));
}

BOOST_AUTO_TEST_CASE(one_pass_forward_and_backward_match_two_passes_to_rounding_in_double) {
  check_one_pass_against_two<double>(std::ldexp(1.0, -46), std::ldexp(1.0, -40));
}

BOOST_AUTO_TEST_CASE(a_source_gathered_from_its_consumers_matches_their_scatter_in_float) {
  check_gathered_against_scattered<float>(std::ldexp(1.0, -16));
}

BOOST_AUTO_TEST_CASE(a_source_gathered_from_its_consumers_matches_their_scatter_in_double) {
  check_gathered_against_scattered<double>(std::ldexp(1.0, -40));
}

BOOST_AUTO_TEST_CASE(rows_wider_than_the_one_pass_capacity_run_the_two_passes) {
  check_wide_rows_run_two_passes<float>();
  check_wide_rows_run_two_passes<double>();
}

BOOST_AUTO_TEST_CASE(sources_stored_in_bf16_read_as_the_values_they_hold) {
  check_bf16_sources_read_as_their_values<float>(std::ldexp(1.0, -19));
  check_bf16_sources_read_as_their_values<double>(std::ldexp(1.0, -46));
}
