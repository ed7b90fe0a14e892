// The emulated cuDNN backend API (src/emulation/libraries/cudnn_backend.cpp): a generic host
// interpreter of operation graphs, so the graphs cudnn_attention.cpp builds are checked for what
// they say, not recognised as "attention". The backend's own CudnnAttention (forward and
// backward, MHA, GQA, multi-query, a padded head dim) against a plain causal softmax attention
// in double; small hand-made graphs for the interpreter's rules (strided transposes, broadcast
// and grouped batch dimensions, reductions, reshape); and what cuDNN refuses (a missing
// attribute, the wrong attribute type, a descriptor set after finalising, shapes that do not
// connect, a variant pack with an unknown or a missing uid, a misaligned pointer).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE libraries_cudnn
#include <cuda_runtime.h>
#include <cudnn_graph.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "emulation/device_array.hpp"
#include "emulation/libraries/cudnn_backend.hpp"
#include "ops/cuda/cudnn_attention.hpp"

using db::test::DeviceArray;

namespace {

using Vec = std::vector<float>;

uint16_t to_bf16_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}
float from_bf16_bits(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// bf16 device copy of values (rounded), and back to float.
struct Bf16Array : DeviceArray<uint16_t> {
  explicit Bf16Array(size_t n) : DeviceArray<uint16_t>(n) {}
  explicit Bf16Array(const Vec& v) : DeviceArray<uint16_t>(v.size()) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits[i] = to_bf16_bits(v[i]);
    upload(bits);
  }
  db::cuda::bf16* bf16() const { return reinterpret_cast<db::cuda::bf16*>(data); }
  Vec values() const {
    const std::vector<uint16_t> bits = to_host();
    Vec v(bits.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = from_bf16_bits(bits[i]);
    return v;
  }
};

// Random bf16-representable values; zero in the head-dim padding [hd, hd_p).
Vec random_padded(size_t rows, int hd, int hd_p, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Vec v(rows * size_t(hd_p), 0.f);
  for (size_t r = 0; r < rows; ++r)
    for (int e = 0; e < hd; ++e) v[r * hd_p + e] = from_bf16_bits(to_bf16_bits(u(rng)));
  return v;
}

// max |a − b| / max |b|, as the gpu tests measure.
double relative_error(const Vec& got, const std::vector<double>& want) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / scale;
}

// Causal attention in double, layouts of cudnn_attention.hpp: q, o [B,T,H,hd_p], k, v
// [B,T,H_kv,hd_p], lse [B,H,T]; query head h reads kv head h / (H / H_kv).
struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
};
Reference reference_attention(const db::AttentionShape& s, int hd_p, const Vec& q, const Vec& k,
                              const Vec& v, const Vec& o_used, const Vec& d_o) {
  const int B = int(s.batch), T = s.seq_len, H = s.heads, Hk = s.kv_heads, hd = s.head_dim;
  const double scale = 1.0 / std::sqrt(double(hd));
  Reference r;
  r.o.assign(q.size(), 0);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(k.size(), 0);
  r.lse.assign(size_t(B) * H * T, 0);
  auto qi = [&](int b, int t, int h, int e) { return ((size_t(b) * T + t) * H + h) * hd_p + e; };
  auto ki = [&](int b, int t, int h, int e) { return ((size_t(b) * T + t) * Hk + h) * hd_p + e; };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int g = h / (H / Hk);
      for (int i = 0; i < T; ++i) {
        std::vector<double> p(size_t(i) + 1);
        double m = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int e = 0; e < hd_p; ++e) dot += double(q[qi(b, i, h, e)]) * k[ki(b, j, g, e)];
          p[size_t(j)] = dot * scale;
          m = std::max(m, p[size_t(j)]);
        }
        double sum = 0;
        for (double& x : p) sum += std::exp(x - m);
        const double lse = m + std::log(sum);
        r.lse[(size_t(b) * H + h) * T + i] = lse;
        for (int j = 0; j <= i; ++j) p[size_t(j)] = std::exp(p[size_t(j)] - lse);
        for (int e = 0; e < hd_p; ++e) {
          double acc = 0;
          for (int j = 0; j <= i; ++j) acc += p[size_t(j)] * v[ki(b, j, g, e)];
          r.o[qi(b, i, h, e)] = acc;
        }
        // Backward with the O the forward wrote (the graph reads it): D = Σ dO ∘ O.
        double D = 0;
        for (int e = 0; e < hd_p; ++e) D += double(d_o[qi(b, i, h, e)]) * o_used[qi(b, i, h, e)];
        for (int j = 0; j <= i; ++j) {
          double dp = 0;
          for (int e = 0; e < hd_p; ++e) dp += double(d_o[qi(b, i, h, e)]) * v[ki(b, j, g, e)];
          const double ds = p[size_t(j)] * (dp - D) * scale;
          for (int e = 0; e < hd_p; ++e) {
            r.dq[qi(b, i, h, e)] += ds * k[ki(b, j, g, e)];
            r.dk[ki(b, j, g, e)] += ds * q[qi(b, i, h, e)];
            r.dv[ki(b, j, g, e)] += p[size_t(j)] * d_o[qi(b, i, h, e)];
          }
        }
      }
    }
  return r;
}

void check_attention(const db::AttentionShape& s) {
  const int hd_p = db::cuda::CudnnAttention::padded_head_dim(s.head_dim);
  const size_t q_rows = size_t(s.batch) * s.seq_len * s.heads;
  const size_t kv_rows = size_t(s.batch) * s.seq_len * s.kv_heads;
  const Vec q = random_padded(q_rows, s.head_dim, hd_p, 1),
            k = random_padded(kv_rows, s.head_dim, hd_p, 2);
  const Vec v = random_padded(kv_rows, s.head_dim, hd_p, 3),
            d_o = random_padded(q_rows, s.head_dim, hd_p, 4);
  Bf16Array qd(q), kd(k), vd(v), dod(d_o), od(q.size()), dqd(q.size()), dkd(k.size()),
      dvd(k.size());
  DeviceArray<float> lse(size_t(s.batch) * s.heads * s.seq_len);
  db::cuda::CudnnAttention attention;
  BOOST_REQUIRE_EQUAL(attention.prepare(s), "");
  attention.forward(od.bf16(), lse.data, qd.bf16(), kd.bf16(), vd.bf16(), s, nullptr);
  attention.backward(dqd.bf16(), dkd.bf16(), dvd.bf16(), dod.bf16(), od.bf16(), lse.data, qd.bf16(),
                     kd.bf16(), vd.bf16(), s, nullptr);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const Vec o = od.values();
  const Reference want = reference_attention(s, hd_p, q, k, v, o, d_o);
  BOOST_TEST_CONTEXT("B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                          << " H_kv=" << s.kv_heads << " hd=" << s.head_dim) {
    // bf16 outputs of products whose P (and dS) the graph rounds to bf16; lse in fp32.
    const double errors[5] = {relative_error(o, want.o), relative_error(lse.to_host(), want.lse),
                              relative_error(dqd.values(), want.dq),
                              relative_error(dkd.values(), want.dk),
                              relative_error(dvd.values(), want.dv)};
    std::printf("B=%lld T=%d H=%d H_kv=%d hd=%d: o %.1e lse %.1e dq %.1e dk %.1e dv %.1e\n",
                (long long)s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim, errors[0],
                errors[1], errors[2], errors[3], errors[4]);
    BOOST_TEST(errors[0] <= 1.6e-2);
    BOOST_TEST(errors[1] <= 1e-5);
    BOOST_TEST(errors[2] <= 1.6e-2);
    BOOST_TEST(errors[3] <= 1.6e-2);
    BOOST_TEST(errors[4] <= 1.6e-2);
    for (size_t r = 0; r < q_rows; ++r)  // the padding of o stays zero
      for (int e = s.head_dim; e < hd_p; ++e) BOOST_TEST(o[r * hd_p + e] == 0.f);
  }
}

// ---- raw backend calls for the hand-made graphs --------------------------------------------

struct Desc {
  cudnnBackendDescriptor_t raw = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type) {
    BOOST_REQUIRE(cudnnBackendCreateDescriptor(type, &raw) == CUDNN_STATUS_SUCCESS);
  }
  ~Desc() { cudnnBackendDestroyDescriptor(raw); }
  Desc(const Desc&) = delete;
  cudnnStatus_t set(cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t count,
                    const void* v) {
    return cudnnBackendSetAttribute(raw, n, t, count, v);
  }
  cudnnStatus_t set(cudnnBackendAttributeName_t n, const Desc& d) {
    return set(n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d.raw);
  }
  cudnnStatus_t finalize() { return cudnnBackendFinalize(raw); }
};

std::unique_ptr<Desc> make_tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
                                  std::vector<int64_t> strides, bool is_virtual = false) {
  auto t = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t alignment = 16;
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type) == 0);
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()),
                       dims.data()) == 0);
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()),
                       strides.data()) == 0);
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) == 0);
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) == 0);
  BOOST_REQUIRE(t->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual) == 0);
  BOOST_REQUIRE(t->finalize() == CUDNN_STATUS_SUCCESS);
  return t;
}

std::unique_ptr<Desc> make_matmul(const Desc& a, const Desc& b, const Desc& c) {
  Desc m(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BOOST_REQUIRE(m.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f) == 0);
  BOOST_REQUIRE(m.finalize() == 0);
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a) == 0);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b) == 0);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c) == 0);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_MATMUL_DESC, m) == 0);
  return op;  // not finalised: the caller decides
}

std::unique_ptr<Desc> make_reduction(cudnnReduceTensorOp_t kind, const Desc& x, const Desc& y) {
  Desc r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BOOST_REQUIRE(
      r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &kind) == 0);
  BOOST_REQUIRE(r.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f) == 0);
  BOOST_REQUIRE(r.finalize() == 0);
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x) == 0);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y) == 0);
  BOOST_REQUIRE(op->set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r) == 0);
  return op;
}

// Graph → heuristics → the first engine config → plan, as cudnn_attention.cpp goes.
struct Plan {
  cudnnHandle_t handle = nullptr;
  std::unique_ptr<Desc> graph, plan;
  explicit Plan(const std::vector<const Desc*>& ops) {
    BOOST_REQUIRE(cudnnCreate(&handle) == 0);
    graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    std::vector<cudnnBackendDescriptor_t> raw;
    for (const Desc* op : ops) raw.push_back(op->raw);
    BOOST_REQUIRE(graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                             int64_t(raw.size()), raw.data()) == 0);
    BOOST_REQUIRE(graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) == 0);
    BOOST_REQUIRE(graph->finalize() == 0);
    Desc heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    BOOST_REQUIRE(heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *graph) == 0);
    BOOST_REQUIRE(heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) == 0);
    BOOST_REQUIRE(heuristics.finalize() == 0);
    Desc config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t count = 0;
    BOOST_REQUIRE(cudnnBackendGetAttribute(heuristics.raw, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                           &config.raw) == 0);
    BOOST_REQUIRE(count >= 1);
    plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    BOOST_REQUIRE(plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) == 0);
    BOOST_REQUIRE(plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config) == 0);
    BOOST_REQUIRE(plan->finalize() == 0);
  }
  ~Plan() {
    plan.reset();
    graph.reset();
    cudnnDestroy(handle);
  }
  cudnnStatus_t execute(std::vector<int64_t> uids, std::vector<void*> pointers) {
    DeviceArray<char> workspace(4096);
    void* ws = workspace.data;
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                           int64_t(uids.size()), uids.data()) == 0);
    BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                           int64_t(pointers.size()), pointers.data()) == 0);
    BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws) == 0);
    BOOST_REQUIRE(pack.finalize() == 0);
    const cudnnStatus_t st = cudnnBackendExecute(handle, plan->raw, pack.raw);
    BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    return st;
  }
};

Vec iota(size_t n, float scale) {
  Vec v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i % 7) * scale - 1.f;
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cudnn_attention_forward_and_backward_match_causal_softmax_attention) {
  const char* shadow = db::emulation::cudnn_shadow_library();
  std::printf("graphs also finalised by the real library: %s\n", shadow ? shadow : "none found");
  check_attention({2, 13, 2, 2, 8});   // multi-head, T off any tile
  check_attention({1, 17, 4, 2, 16});  // grouped-query heads
  check_attention({1, 9, 4, 1, 8});    // multi-query
  check_attention({1, 11, 2, 1, 12});  // head dim padded to 16
}

BOOST_AUTO_TEST_CASE(matmul_reads_transposes_through_strides_and_broadcasts_grouped_batches) {
  // C[g, m, n] = Σ_k A[g, m, k] · B[g/2, k, n] with B stored transposed ([n, k] rows) and
  // shared by pairs of batches (a grouped batch dimension, as GQA's kv heads).
  const int64_t G = 4, M = 3, N = 5, K = 6;
  const Vec a = iota(size_t(G * M * K), 0.25f), b = iota(size_t(G / 2 * N * K), 0.5f);
  DeviceArray<float> ad(a.size()), bd(b.size()), cd(size_t(G * M * N));
  ad.upload(a);
  bd.upload(b);
  auto ta = make_tensor(1, CUDNN_DATA_FLOAT, {G, M, K}, {M * K, K, 1});
  auto tb = make_tensor(2, CUDNN_DATA_FLOAT, {G / 2, K, N}, {N * K, 1, K});
  auto tc = make_tensor(3, CUDNN_DATA_FLOAT, {G, M, N}, {M * N, N, 1});
  auto op = make_matmul(*ta, *tb, *tc);
  BOOST_REQUIRE(op->finalize() == 0);
  Plan plan({op.get()});
  BOOST_REQUIRE(plan.execute({1, 2, 3}, {ad.data, bd.data, cd.data}) == 0);
  const Vec c = cd.to_host();
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += double(a[size_t((g * M + m) * K + k)]) * b[size_t(((g / 2) * N + n) * K + k)];
        BOOST_TEST(c[size_t((g * M + m) * N + n)] == float(want));
      }
}

BOOST_AUTO_TEST_CASE(reduction_and_reshape_follow_the_descriptors) {
  // x [2, 3, 4]: y1 = max over the last dim [2, 3, 1]; y2 = sum over the first [1, 3, 4];
  // xt = x seen as its transpose [2, 4, 3] (a reshape with swapped strides), copied out.
  const Vec x = iota(24, 0.75f);
  DeviceArray<float> xd(24), y1d(6), y2d(12), xtd(24);
  xd.upload(x);
  auto tx = make_tensor(1, CUDNN_DATA_FLOAT, {2, 3, 4}, {12, 4, 1});
  auto t1 = make_tensor(2, CUDNN_DATA_FLOAT, {2, 3, 1}, {3, 1, 1});
  auto t2 = make_tensor(3, CUDNN_DATA_FLOAT, {1, 3, 4}, {12, 4, 1});
  auto tv = make_tensor(100, CUDNN_DATA_FLOAT, {2, 4, 3}, {12, 1, 4}, /*virtual*/ true);
  auto tt = make_tensor(4, CUDNN_DATA_FLOAT, {2, 4, 3}, {12, 3, 1});
  auto r1 = make_reduction(CUDNN_REDUCE_TENSOR_MAX, *tx, *t1);
  auto r2 = make_reduction(CUDNN_REDUCE_TENSOR_ADD, *tx, *t2);
  Desc reshape(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  BOOST_REQUIRE(reshape.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, *tx) == 0);
  BOOST_REQUIRE(reshape.set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, *tv) == 0);
  // The virtual transpose copied out by an identity pointwise into a packed [2, 4, 3] tensor.
  Desc identity(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnPointwiseMode_t mode = CUDNN_POINTWISE_IDENTITY;
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BOOST_REQUIRE(identity.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode) == 0);
  BOOST_REQUIRE(identity.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f) == 0);
  BOOST_REQUIRE(identity.finalize() == 0);
  Desc copy(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  BOOST_REQUIRE(copy.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, identity) == 0);
  BOOST_REQUIRE(copy.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *tv) == 0);
  BOOST_REQUIRE(copy.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *tt) == 0);
  for (Desc* d : {r1.get(), r2.get(), &reshape, &copy}) BOOST_REQUIRE(d->finalize() == 0);
  // Given out of order: the graph orders the copy after the reshape.
  Plan plan({&copy, r1.get(), &reshape, r2.get()});
  BOOST_REQUIRE(plan.execute({1, 2, 3, 4}, {xd.data, y1d.data, y2d.data, xtd.data}) == 0);
  const Vec y1 = y1d.to_host(), y2 = y2d.to_host(), xt = xtd.to_host();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float m = -INFINITY;
      for (int k = 0; k < 4; ++k) m = std::max(m, x[size_t(i * 12 + j * 4 + k)]);
      BOOST_TEST(y1[size_t(i * 3 + j)] == m);
    }
  for (int j = 0; j < 12; ++j) BOOST_TEST(y2[size_t(j)] == x[size_t(j)] + x[size_t(12 + j)]);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j)
        BOOST_TEST(xt[size_t(i * 12 + k * 3 + j)] == x[size_t(i * 12 + j * 4 + k)]);
}

BOOST_AUTO_TEST_CASE(descriptors_refuse_what_cudnn_refuses) {
  // A tensor without its alignment; with the wrong attribute type; set after finalising;
  // dims and strides of different lengths.
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  const int64_t dims[3] = {1, 2, 3}, strides[2] = {6, 3}, uid = 7;
  const int32_t uid32 = 7;
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f) == 0);
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims) == 0);
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 2, strides) == 0);
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT32, 1, &uid32) ==
             CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) == 0);
  BOOST_TEST(t.finalize() == CUDNN_STATUS_BAD_PARAM);  // no byte alignment
  char message[256];
  cudnnGetLastErrorString(message, sizeof message);
  BOOST_TEST(std::string(message).find("ALIGNMENT") != std::string::npos);
  const int64_t alignment = 16;
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) == 0);
  BOOST_TEST(t.finalize() == CUDNN_STATUS_BAD_PARAM);  // 3 dims, 2 strides
  const int64_t strides3[3] = {6, 3, 1};
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides3) == 0);
  BOOST_TEST(t.finalize() == 0);
  BOOST_TEST(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) ==
             CUDNN_STATUS_BAD_PARAM);

  // A matmul whose inner dimensions differ; an operation given a tensor not finalised.
  auto a = make_tensor(1, CUDNN_DATA_FLOAT, {1, 2, 3}, {6, 3, 1});
  auto b = make_tensor(2, CUDNN_DATA_FLOAT, {1, 4, 5}, {20, 5, 1});
  auto c = make_tensor(3, CUDNN_DATA_FLOAT, {1, 2, 5}, {10, 5, 1});
  auto bad = make_matmul(*a, *b, *c);
  BOOST_TEST(bad->finalize() == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
  // Batch extents 3 and 2 into 6: each divides C's, but not each other (cuDNN refuses).
  auto a3 = make_tensor(11, CUDNN_DATA_FLOAT, {3, 2, 3}, {6, 3, 1});
  auto b2 = make_tensor(12, CUDNN_DATA_FLOAT, {2, 3, 4}, {12, 4, 1});
  auto c6 = make_tensor(13, CUDNN_DATA_FLOAT, {6, 2, 4}, {8, 4, 1});
  auto batches = make_matmul(*a3, *b2, *c6);
  BOOST_TEST(batches->finalize() != CUDNN_STATUS_SUCCESS);
  Desc open(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  BOOST_TEST(op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, open) ==
             CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  // A virtual tensor read but never written.
  auto va = make_tensor(101, CUDNN_DATA_FLOAT, {1, 2, 3}, {6, 3, 1}, true);
  auto b35 = make_tensor(2, CUDNN_DATA_FLOAT, {1, 3, 5}, {15, 5, 1});
  auto dangling = make_matmul(*va, *b35, *c);
  BOOST_REQUIRE(dangling->finalize() == 0);
  cudnnHandle_t handle;
  BOOST_REQUIRE(cudnnCreate(&handle) == 0);
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  BOOST_REQUIRE(graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, *dangling) == 0);
  BOOST_REQUIRE(graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) == 0);
  BOOST_TEST(graph.finalize() == CUDNN_STATUS_BAD_PARAM);
  cudnnDestroy(handle);
}

BOOST_AUTO_TEST_CASE(execute_refuses_unknown_or_missing_uids_and_misaligned_pointers) {
  auto ta = make_tensor(1, CUDNN_DATA_FLOAT, {1, 2, 2}, {4, 2, 1});
  auto tb = make_tensor(2, CUDNN_DATA_FLOAT, {1, 2, 2}, {4, 2, 1});
  auto tc = make_tensor(3, CUDNN_DATA_FLOAT, {1, 2, 2}, {4, 2, 1});
  auto op = make_matmul(*ta, *tb, *tc);
  BOOST_REQUIRE(op->finalize() == 0);
  Plan plan({op.get()});
  DeviceArray<float> buffer(64);
  float* p = buffer.data;
  BOOST_TEST(plan.execute({1, 2}, {p, p + 8}) == CUDNN_STATUS_BAD_PARAM_NULL_POINTER);  // no C
  BOOST_TEST(plan.execute({1, 2, 3, 9}, {p, p + 8, p + 16, p + 24}) == CUDNN_STATUS_BAD_PARAM);
  BOOST_TEST(plan.execute({1, 2, 3}, {p, p + 8, p + 17}) ==
             CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);  // promised 16 bytes
  BOOST_TEST(plan.execute({1, 2, 3}, {p, p + 8, p + 16}) == CUDNN_STATUS_SUCCESS);
}

// Last: leaves the emulated device's error state behind, as a real fault would.
BOOST_AUTO_TEST_CASE(a_tensor_past_its_allocation_is_a_device_fault) {
  auto ta = make_tensor(1, CUDNN_DATA_FLOAT, {1, 4, 4}, {16, 4, 1});
  auto tb = make_tensor(2, CUDNN_DATA_FLOAT, {1, 4, 4}, {16, 4, 1});
  auto tc = make_tensor(3, CUDNN_DATA_FLOAT, {1, 4, 4}, {16, 4, 1});
  auto op = make_matmul(*ta, *tb, *tc);
  BOOST_REQUIRE(op->finalize() == 0);
  Plan plan({op.get()});
  DeviceArray<float> full(16), c(16);
  float* small = nullptr;
  BOOST_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&small), 8 * sizeof(float)) == cudaSuccess);
  DeviceArray<char> workspace(4096);
  void* ws = workspace.data;
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {1, 2, 3};
  void* pointers[3] = {full.data, small, c.data};
  BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids) == 0);
  BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers) ==
                0);
  BOOST_REQUIRE(pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws) == 0);
  BOOST_REQUIRE(pack.finalize() == 0);
  BOOST_TEST(cudnnBackendExecute(plan.handle, plan.plan->raw, pack.raw) == CUDNN_STATUS_SUCCESS);
  BOOST_TEST(cudaDeviceSynchronize() != cudaSuccess);
  cudaFree(small);
}
