// The backend conformance suite: written once, compiled once per registered backend
// (tests/backend/tests.cmake defines DB_BACKEND_NAME), so every backend passes the same checks
// against the same plain double-precision references written here — memory, copies, the
// primitive ops, the optimizer step, the gradient sum and what the backend says about itself.
// A backend that cannot run here (the CUDA backend without a GPU) prints why and passes.
#define BOOST_TEST_MODULE backend_conformance
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "ops/backend.hpp"
#include "train/mpi_test_main.hpp"

using namespace db;

namespace {

Backend& backend() {
  return find_backend(DB_BACKEND_NAME);
}

// Every test body starts with this: a backend that cannot run here says why and passes.
#define DB_REQUIRE_BACKEND()                                                        \
  do {                                                                              \
    if (!backend().available()) {                                                   \
      std::printf("%s [%s]: %s: skipped\n",                                         \
                  boost::unit_test::framework::current_test_case().p_name->c_str(), \
                  DB_BACKEND_NAME, backend().unavailable_reason().c_str());         \
      BOOST_TEST(true);                                                             \
      return;                                                                       \
    }                                                                               \
  } while (0)

std::vector<float> random_floats(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed, "backend-conformance");
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.normal() * scale);
  return v;
}

// A copy of host values in the backend's memory.
template <class T>
Buffer<T> on_backend(const std::vector<T>& host) {
  MemorySpaceScope scope(backend().space());
  Buffer<T> b;
  b.upload(host);
  return b;
}
template <class T>
Buffer<T> zeros_on_backend(size_t n) {
  MemorySpaceScope scope(backend().space());
  Buffer<T> b;
  b.assign_zeros(n);
  return b;
}

// max |got − want| / max |want|: norm-wise relative, so entries near zero do not turn rounding
// into large ratios.
double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// fp32 arithmetic against double references; only the order of additions differs.
constexpr double kTolerance = 1e-5;

#define CHECK_CLOSE(got, want, what)                                                            \
  do {                                                                                          \
    const double error_ = relative_error(got, want);                                            \
    std::printf("  [%s] %s: relative error %.2e (bound %.0e)\n", DB_BACKEND_NAME, what, error_, \
                kTolerance);                                                                    \
    BOOST_TEST(error_ <= kTolerance);                                                           \
  } while (0)

std::unique_ptr<Ops<float>> ops() {
  return make_ops<float>(backend(), {Precision::fp32, AttentionPath::reference});
}

}  // namespace

BOOST_AUTO_TEST_CASE(backend_is_registered_under_its_name_and_owns_its_space) {
  BOOST_TEST(std::string(backend().name()) == DB_BACKEND_NAME);
  BOOST_TEST(backend_names().find(DB_BACKEND_NAME) != std::string::npos);
  BOOST_TEST(&backend_of(backend().space()) == &backend());
  DB_REQUIRE_BACKEND();
  BOOST_TEST(&choose_backend(DB_BACKEND_NAME) == &backend());
  BOOST_TEST((ops()->space() == backend().space()));
  BOOST_TEST(!backend().device_name().empty());
  for (const auto& [key, value] : backend().properties()) BOOST_TEST(!key.empty());
}

BOOST_AUTO_TEST_CASE(memory_round_trips_zeroes_and_copies_deeply) {
  DB_REQUIRE_BACKEND();
  const std::vector<float> host = random_floats(1000, 1);
  Buffer<float> a = on_backend(host);
  BOOST_TEST((a.space() == backend().space()));
  BOOST_TEST(a.to_host() == host);
  Buffer<float> b = a;  // deep copy in the same space
  a.zero();
  BOOST_TEST(b.to_host() == host);
  BOOST_TEST(a.to_host() == std::vector<float>(1000, 0.f));
  Buffer<float> on_host;
  on_host.assign(b.data(), b.size(), b.space());  // device → host through memory::copy
  BOOST_TEST(on_host.on_host());
  BOOST_TEST(on_host.to_host() == host);
}

BOOST_AUTO_TEST_CASE(released_memory_is_reused_and_cached_blocks_can_be_given_back) {
  DB_REQUIRE_BACKEND();
  const std::vector<float> host = random_floats(4096, 2);
  for (int round = 0; round < 3; ++round) {  // sizes recur, as in training steps
    Buffer<float> a = on_backend(host);
    Buffer<float> b = zeros_on_backend<float>(4096);
    b.assign(a.data(), a.size(), a.space());
    BOOST_TEST(b.to_host() == host);
  }
  backend().release_cached_memory();  // as at the end of a run
  Buffer<float> c = on_backend(host);
  BOOST_TEST(c.to_host() == host);
  BOOST_TEST(backend().memory_total_bytes() > 0u);
  BOOST_TEST(backend().memory_used_bytes() <= backend().memory_total_bytes());
}

BOOST_AUTO_TEST_CASE(gemm_matches_the_reference_for_every_transpose) {
  DB_REQUIRE_BACKEND();
  const int M = 37, N = 29, K = 23;
  const float alpha = 0.7f, beta = 0.3f;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
      const std::vector<float> A = random_floats(size_t(ta ? K : M) * lda, 3);
      const std::vector<float> B = random_floats(size_t(tb ? N : K) * ldb, 4);
      const std::vector<float> C = random_floats(size_t(M) * ldc, 5);
      std::vector<double> want(C.begin(), C.end());
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = 0;
          for (int k = 0; k < K; ++k)
            s += double(ta ? A[k * lda + i] : A[i * lda + k]) *
                 (tb ? B[j * ldb + k] : B[k * ldb + j]);
          want[i * ldc + j] = alpha * s + beta * double(C[i * ldc + j]);
        }
      Buffer<float> a = on_backend(A), b = on_backend(B), c = on_backend(C);
      ops()->gemm(ta, tb, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
      CHECK_CLOSE(c.to_host(), want,
                  ("gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb)).c_str());
    }
}

BOOST_AUTO_TEST_CASE(linear_forward_and_backward_match_the_reference) {
  DB_REQUIRE_BACKEND();
  const int rows = 19, in = 24, out = 17;
  const std::vector<float> X = random_floats(size_t(rows) * in, 6),
                           W = random_floats(size_t(out) * in, 7),
                           dY = random_floats(size_t(rows) * out, 8),
                           dW0 = random_floats(size_t(out) * in, 9);
  std::vector<double> y(rows * out, 0), dx(rows * in, 0), dw(dW0.begin(), dW0.end());
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) {
        y[r * out + o] += double(X[r * in + i]) * W[o * in + i];
        dx[r * in + i] += double(dY[r * out + o]) * W[o * in + i];
        dw[o * in + i] += double(dY[r * out + o]) * X[r * in + i];
      }
  auto o = ops();
  Buffer<float> x = on_backend(X), w = on_backend(W), dy = on_backend(dY), dW = on_backend(dW0);
  Buffer<float> yb = zeros_on_backend<float>(rows * out), dxb = zeros_on_backend<float>(rows * in);
  o->linear_forward(yb.data(), x.data(), w.data(), rows, in, out);
  o->linear_backward(dxb.data(), dW.data(), dy.data(), x.data(), w.data(), rows, in, out, false);
  CHECK_CLOSE(yb.to_host(), y, "linear y");
  CHECK_CLOSE(dxb.to_host(), dx, "linear dx");
  CHECK_CLOSE(dW.to_host(), dw, "linear dW (added)");
}

BOOST_AUTO_TEST_CASE(rmsnorm_and_swiglu_match_the_reference) {
  DB_REQUIRE_BACKEND();
  const int rows = 13, width = 40;
  const double eps = 1e-5;
  const std::vector<float> X = random_floats(size_t(rows) * width, 10),
                           G = random_floats(width, 11);
  std::vector<double> y(X.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int j = 0; j < width; ++j) ss += double(X[r * width + j]) * X[r * width + j];
    const double rstd = 1 / std::sqrt(ss / width + eps);
    for (int j = 0; j < width; ++j) y[r * width + j] = X[r * width + j] * rstd * G[j];
  }
  auto o = ops();
  Buffer<float> x = on_backend(X), g = on_backend(G);
  Buffer<float> yb = zeros_on_backend<float>(X.size()), rstd = zeros_on_backend<float>(rows);
  o->rmsnorm_forward(yb.data(), rstd.data(), x.data(), g.data(), rows, width, eps);
  CHECK_CLOSE(yb.to_host(), y, "rmsnorm y");

  const std::vector<float> A = random_floats(500, 12), B = random_floats(500, 13);
  std::vector<double> h(500);
  for (int i = 0; i < 500; ++i) h[i] = A[i] / (1 + std::exp(-double(A[i]))) * B[i];
  Buffer<float> a = on_backend(A), b = on_backend(B), hb = zeros_on_backend<float>(500);
  o->swiglu_forward(hb.data(), a.data(), b.data(), 500);
  CHECK_CLOSE(hb.to_host(), h, "swiglu h");
}

BOOST_AUTO_TEST_CASE(embedding_gathers_rows_and_adds_gradients_of_repeated_tokens) {
  DB_REQUIRE_BACKEND();
  const int vocab = 11, d = 8;
  const std::vector<int32_t> tokens = {3, 0, 3, 10, 7, 3};
  const int64_t rows = int64_t(tokens.size());
  const std::vector<float> table = random_floats(size_t(vocab) * d, 14),
                           dX = random_floats(rows * d, 15);
  std::vector<double> x(rows * d), dtable(vocab * d, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < d; ++j) {
      x[r * d + j] = table[tokens[r] * d + j];
      dtable[tokens[r] * d + j] += dX[r * d + j];
    }
  auto o = ops();
  Buffer<int32_t> tok = on_backend(tokens);
  Buffer<float> tb = on_backend(table), dx = on_backend(dX);
  Buffer<float> xb = zeros_on_backend<float>(rows * d), dtb = zeros_on_backend<float>(vocab * d);
  o->embedding_forward(xb.data(), tok.data(), tb.data(), rows, d);
  o->embedding_backward(dtb.data(), tok.data(), dx.data(), rows, d);
  CHECK_CLOSE(xb.to_host(), x, "embedding x");
  CHECK_CLOSE(dtb.to_host(), dtable, "embedding dtable");
}

BOOST_AUTO_TEST_CASE(fused_head_and_loss_match_log_softmax) {
  DB_REQUIRE_BACKEND();
  const HeadShape s{7, 12, 53};
  const std::vector<int32_t> targets = {5, 0, 52, -1, 17, 17, 3};  // one row without a target
  const std::vector<float> H = random_floats(s.rows * s.d, 16),
                           W = random_floats(size_t(s.vocab) * s.d, 17, 0.5);
  const double grad_scale = 0.25;
  double loss = 0;
  std::vector<double> dh(s.rows * s.d, 0);
  for (int64_t r = 0; r < s.rows; ++r) {
    if (targets[r] < 0) continue;
    std::vector<double> z(s.vocab);
    double m = -1e300;
    for (int v = 0; v < s.vocab; ++v) {
      double dot = 0;
      for (int j = 0; j < s.d; ++j) dot += double(H[r * s.d + j]) * W[v * s.d + j];
      z[v] = dot;
      m = std::max(m, dot);
    }
    double sum = 0;
    for (double zv : z) sum += std::exp(zv - m);
    const double lse = m + std::log(sum);
    loss += lse - z[targets[r]];
    for (int v = 0; v < s.vocab; ++v) {
      const double g = (std::exp(z[v] - lse) - (v == targets[r])) * grad_scale;
      for (int j = 0; j < s.d; ++j) dh[r * s.d + j] += g * W[v * s.d + j];
    }
  }
  auto o = ops();
  Buffer<float> h = on_backend(H), w = on_backend(W);
  Buffer<int32_t> t = on_backend(targets);
  Buffer<float> dhb = zeros_on_backend<float>(H.size()), dw = zeros_on_backend<float>(W.size());
  // The loss is added to an accumulator in backend memory, which holds 1 before.
  Buffer<double> sum = on_backend(std::vector<double>{1.0});
  o->cross_entropy(sum.data(), h.data(), w.data(), t.data(), s, dhb.data(), dw.data(), grad_scale);
  const double got = sum.to_host()[0] - 1.0;
  std::printf("  [%s] loss %.9g, reference %.9g\n", DB_BACKEND_NAME, got, loss);
  BOOST_TEST(std::abs(got - loss) <= kTolerance * std::abs(loss));
  // The same loss without gradients: the row of each target logit is read before any write.
  Buffer<float> h2 = on_backend(H);
  Buffer<double> forward_sum = on_backend(std::vector<double>{0.0});
  o->cross_entropy(forward_sum.data(), h2.data(), w.data(), t.data(), s, nullptr, nullptr, 1.0);
  const double forward_only = forward_sum.to_host()[0];
  BOOST_TEST(std::abs(forward_only - loss) <= kTolerance * std::abs(loss));
  CHECK_CLOSE(dhb.to_host(), dh, "head dh");
}

BOOST_AUTO_TEST_CASE(adamw_update_matches_the_torch_formula) {
  DB_REQUIRE_BACKEND();
  const int64_t n = 3000;
  const std::vector<float> P = random_floats(n, 18), G = random_floats(n, 19),
                           M0 = random_floats(n, 20, 0.1);
  std::vector<float> V0 = random_floats(n, 21, 0.1);
  for (float& v : V0) v = v * v;
  std::vector<uint8_t> decay(n);
  for (int64_t i = 0; i < n; ++i) decay[i] = uint8_t(i % 3 != 0);
  const AdamWUpdate u{1e-2, 0.9, 0.95, 1e-8, 0.1, 3, 0.5};
  std::vector<double> p(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double g = double(G[i]) * u.clip_scale;
    m[i] = u.beta1 * M0[i] + (1 - u.beta1) * g;
    v[i] = u.beta2 * V0[i] + (1 - u.beta2) * g * g;
    double x = P[i];
    if (decay[i]) x -= u.lr * u.weight_decay * x;
    const double mhat = double(float(m[i])) / (1 - std::pow(u.beta1, 3));
    const double vhat = double(float(v[i])) / (1 - std::pow(u.beta2, 3));
    p[i] = x - u.lr * mhat / (std::sqrt(vhat) + u.eps);
  }
  Buffer<float> pb = on_backend(P), gb = on_backend(G), mb = on_backend(M0), vb = on_backend(V0);
  Buffer<uint8_t> db = on_backend(decay);
  backend().adamw_update(pb.data(), gb.data(), mb.data(), vb.data(), db.data(), n, u, nullptr);
  CHECK_CLOSE(pb.to_host(), p, "adamw values");
  CHECK_CLOSE(mb.to_host(), m, "adamw m");
  CHECK_CLOSE(vb.to_host(), v, "adamw v");
}

// The bf16 weight copy that bf16 storage reads (model/parameters.hpp) is written by the update
// itself: it must be core/bfloat16.hpp's rounding of the fp32 values the same call stored, bit
// for bit (on the GPU __float2bfloat16, which that rounding reproduces), and writing it must
// leave the fp32 update exactly as it is without it.
BOOST_AUTO_TEST_CASE(adamw_update_writes_the_bf16_rounding_of_its_updated_values) {
  DB_REQUIRE_BACKEND();
  const int64_t n = 3000;
  const std::vector<float> P = random_floats(n, 23), G = random_floats(n, 24),
                           M0 = random_floats(n, 25, 0.1);
  std::vector<float> V0 = random_floats(n, 26, 0.1);
  for (float& v : V0) v = v * v;
  std::vector<uint8_t> decay(n, 0);
  const AdamWUpdate u{1e-3, 0.9, 0.95, 1e-8, 0.0, 1, 1.0};
  Buffer<float> plain = on_backend(P), pb = on_backend(P), gb = on_backend(G);
  Buffer<float> m1 = on_backend(M0), v1 = on_backend(V0), m2 = on_backend(M0), v2 = on_backend(V0);
  Buffer<uint8_t> db = on_backend(decay);
  Buffer<bfloat16> copy = zeros_on_backend<bfloat16>(n);
  backend().adamw_update(plain.data(), gb.data(), m1.data(), v1.data(), db.data(), n, u, nullptr);
  backend().adamw_update(pb.data(), gb.data(), m2.data(), v2.data(), db.data(), n, u, copy.data());
  const std::vector<float> values = pb.to_host(), without = plain.to_host();
  const std::vector<bfloat16> rounded = copy.to_host();
  int64_t same_update = 0, same_rounding = 0;
  for (int64_t i = 0; i < n; ++i) {
    same_update += values[i] == without[i];
    same_rounding += rounded[i].bits == to_bfloat16(values[i]).bits;
  }
  BOOST_TEST(same_update == n);
  BOOST_TEST(same_rounding == n);
}

BOOST_AUTO_TEST_CASE(sum_of_squares_matches_the_reference_and_repeats_exactly) {
  DB_REQUIRE_BACKEND();
  const int64_t n = 3 * 4096 + 17;  // chunk and block edges
  const std::vector<float> X = random_floats(n, 22);
  double want = 0;
  for (float x : X) want += double(x) * x;
  Buffer<float> x = on_backend(X);
  const double got = backend().sum_of_squares(x.data(), n);
  std::printf("  [%s] sum of squares %.17g, reference %.17g\n", DB_BACKEND_NAME, got, want);
  BOOST_TEST(std::abs(got - want) <= 1e-12 * want);
  BOOST_TEST(backend().sum_of_squares(x.data(), n) == got);  // bit for bit
}

BOOST_AUTO_TEST_CASE(gradient_reducer_sums_over_the_ranks_and_names_its_path) {
  DB_REQUIRE_BACKEND();
  const Communicator job = Communicator::world();  // a test process is one whole job
  auto reducer = backend().make_gradient_reducer(job);
  BOOST_TEST(!reducer->name().empty());
  std::printf("  [%s] %d rank(s): gradient reduction \"%s\"\n", DB_BACKEND_NAME, job.size(),
              reducer->name().c_str());
  std::vector<float> mine(1000);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = float((job.rank() + 1) * (i % 7));
  Buffer<float> g = on_backend(mine);
  reducer->sum(g);
  const double ranks_sum = job.size() * (job.size() + 1) / 2.0;
  std::vector<double> want(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) want[i] = ranks_sum * double(i % 7);
  BOOST_TEST(relative_error(g.to_host(), want) == 0.0);
  if (job.size() == 1) BOOST_TEST(reducer->name() == "none (one rank)");
}
