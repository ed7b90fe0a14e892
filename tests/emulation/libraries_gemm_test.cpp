// The emulated cuBLASLt/cuBLAS (src/emulation/libraries/cublas_lt.cpp) through the backend's own
// gemm.cu: every transpose, the three precision combinations and bf16 tensor-core math against
// a naive double loop; padded leading dimensions, K = 0 (the cublasGemmEx path), beta = 0 over
// NaN; and what cuBLASLt refuses: a pointer less aligned than its algorithm was chosen for, a
// declared alignment below one element, unsupported types, and an operand past the end of its
// allocation (a device fault naming the operand). The products run when their stream reaches
// them, so a missing event wait shows, and a captured product runs at each graph replay.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE libraries_gemm
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "emulation/device_array.hpp"
#include "ops/cuda/gemm.hpp"

using db::cuda::bf16;

using db::test::DeviceArray;

namespace {

float bf16_to_float(bf16 v) {
  uint16_t bits;
  std::memcpy(&bits, &v, 2);
  const uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

bf16 float_to_bf16(float f) {  // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  const uint16_t half = uint16_t(bits >> 16);
  bf16 v;
  std::memcpy(static_cast<void*>(&v), &half, 2);
  return v;
}

float round_bf16(float f) {
  return bf16_to_float(float_to_bf16(f));
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, bf16>)
      out[i] = float_to_bf16(v[i]);
    else
      out[i] = v[i];
  }
  return out;
}

template <class T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, bf16>)
    return bf16_to_float(v);
  else
    return v;
}

// One row-major case C[M,N] = alpha·op(A)·op(B) + beta·C with leading dimensions padded by
// `pad`; compared with a double loop over the inputs as the device sees them.
template <class TA, class TC>
void check_case(bool trans_a, bool trans_b, int M, int N, int K, int pad, float alpha, float beta,
                bool bf16_math) {
  const int a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
  std::vector<float> a = random_values(size_t(a_rows) * lda, 1 + M + 3 * K);
  std::vector<float> b = random_values(size_t(b_rows) * ldb, 2 + N);
  std::vector<float> c = random_values(size_t(M) * ldc, 3);
  if (beta == 0.f)
    for (float& x : c) x = std::numeric_limits<float>::quiet_NaN();  // must not be read
  const std::vector<TA> ha = as<TA>(a), hb = as<TA>(b);
  const std::vector<TC> hc = as<TC>(c);
  DeviceArray<TA> da(ha), db_(hb);
  DeviceArray<TC> dc(hc);
  db::cuda::GemmHandle handle(size_t(1) << 20, bf16_math);
  db::cuda::gemm(handle, trans_a, trans_b, M, N, K, alpha, da.data, lda, db_.data, ldb, beta,
                 dc.data, ldc, nullptr);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<TC> got = dc.to_host();
  const bool round_in = bf16_math && std::is_same_v<TA, float>;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double want = 0, magnitude = 0;
      for (int p = 0; p < K; ++p) {
        float x = to_float(ha[size_t(trans_a ? p * lda + i : i * lda + p)]);
        float y = to_float(hb[size_t(trans_b ? j * ldb + p : p * ldb + j)]);
        if (round_in) x = round_bf16(x), y = round_bf16(y);
        want += double(x) * y;
        magnitude += std::fabs(double(x) * y);
      }
      want *= alpha;
      magnitude *= std::fabs(alpha);
      if (beta != 0.f) {
        want += double(beta) * to_float(hc[size_t(i) * ldc + j]);
        magnitude += std::fabs(double(beta) * to_float(hc[size_t(i) * ldc + j]));
      }
      const double value = to_float(got[size_t(i) * ldc + j]);
      // fp32 accumulation: a few ulps of the magnitude; a bf16 result: rounded to nearest, so
      // half a bf16 ulp more (a truncating conversion would be off by up to a whole one).
      double tolerance = 4e-7 * (K + 2) * magnitude + 1e-30;
      if (std::is_same_v<TC, bf16> && want != 0) tolerance += std::ldexp(1.0, std::ilogb(want) - 8);
      BOOST_TEST_CONTEXT("ta=" << trans_a << " tb=" << trans_b << " M=" << M << " N=" << N
                               << " K=" << K << " at (" << i << "," << j << ")") {
        BOOST_TEST(std::fabs(value - want) <= tolerance, value << " vs " << want);
      }
    }
  // The padding columns of C are never written.
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j) {
      const float before = to_float(hc[size_t(i) * ldc + j]),
                  after = to_float(got[size_t(i) * ldc + j]);
      BOOST_TEST((std::isnan(before) ? std::isnan(after) : before == after));
    }
}

template <class TA, class TC>
void check_all_transposes(bool bf16_math) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_case<TA, TC>(ta, tb, 7, 5, 3, 0, 1.f, 0.f, bf16_math);
      check_case<TA, TC>(ta, tb, 16, 24, 40, 3, 0.5f, 0.75f, bf16_math);
      check_case<TA, TC>(ta, tb, 33, 9, 17, 1, -1.f, 1.f, bf16_math);
    }
}

// A column-major matmul descriptor set for fp32 m×n×k through the raw cuBLASLt calls.
struct LtCase {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtCase(cudaDataType_t ab, cudaDataType_t ct, cublasComputeType_t compute, int m, int n, int k) {
    BOOST_REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
    BOOST_REQUIRE(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    BOOST_REQUIRE(cublasLtMatrixLayoutCreate(&a, ab, m, k, m) == CUBLAS_STATUS_SUCCESS);
    BOOST_REQUIRE(cublasLtMatrixLayoutCreate(&b, ab, k, n, k) == CUBLAS_STATUS_SUCCESS);
    BOOST_REQUIRE(cublasLtMatrixLayoutCreate(&c, ct, m, n, m) == CUBLAS_STATUS_SUCCESS);
    BOOST_REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  }
  ~LtCase() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
  }
  void align_all(uint32_t bytes) {
    for (auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      BOOST_REQUIRE(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof bytes) ==
                    CUBLAS_STATUS_SUCCESS);
  }
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t& result, int& found) {
    return cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 1, &result, &found);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(fp32_gemm_matches_a_naive_loop_for_every_transpose) {
  check_all_transposes<float, float>(false);
}

BOOST_AUTO_TEST_CASE(fp32_gemm_with_bf16_math_rounds_its_inputs_to_bf16) {
  check_all_transposes<float, float>(true);
  // Inputs that bf16 cannot hold: 1 + 2⁻¹⁰ rounds to 1, so the product is exactly 1·1.
  const float x = 1.f + 1.f / 1024;
  DeviceArray<float> a(std::vector<float>{x}), b(std::vector<float>{x}), c(std::vector<float>{0});
  db::cuda::GemmHandle handle(0, true);
  db::cuda::gemm(handle, false, false, 1, 1, 1, 1.f, a.data, 1, b.data, 1, 0.f, c.data, 1);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(c.to_host()[0] == 1.f);
  db::cuda::GemmHandle exact(0, false);
  db::cuda::gemm(exact, false, false, 1, 1, 1, 1.f, a.data, 1, b.data, 1, 0.f, c.data, 1);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(c.to_host()[0] == x * x);
}

BOOST_AUTO_TEST_CASE(bf16_gemm_with_bf16_and_fp32_results_matches_a_naive_loop) {
  check_all_transposes<bf16, bf16>(false);
  check_all_transposes<bf16, float>(false);
}

BOOST_AUTO_TEST_CASE(k_zero_scales_c_by_beta_through_gemm_ex) {
  DeviceArray<float> a(std::vector<float>{1}), b(std::vector<float>{1});
  DeviceArray<float> c(std::vector<float>{2, 4, 6, 8});
  db::cuda::GemmHandle handle(0, false);
  db::cuda::gemm(handle, false, false, 2, 2, 0, 1.f, a.data, 1, b.data, 2, 0.5f, c.data, 2);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(c.to_host() == (std::vector<float>{1, 2, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(operands_at_odd_addresses_get_their_own_plan_and_run) {
  // gemm.cu keys its plans by the operands' alignment: A at 4-byte alignment must not reuse
  // the 256-byte plan (the emulated cuBLASLt refuses that, as the real one does).
  std::vector<float> host = random_values(4 * 8 + 1, 9);
  DeviceArray<float> a(host), b(random_values(8 * 4, 10)), c(std::vector<float>(16, 0.f));
  db::cuda::GemmHandle handle(0, false);
  db::cuda::gemm(handle, false, false, 4, 4, 8, 1.f, a.data, 8, b.data, 4, 0.f, c.data, 4);
  db::cuda::gemm(handle, false, false, 4, 4, 8, 1.f, a.data + 1, 8, b.data, 4, 0.f, c.data, 4);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<float> got = c.to_host(), bh = b.to_host();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int p = 0; p < 8; ++p)
        want += double(host[size_t(1 + i * 8 + p)]) * bh[size_t(p * 4 + j)];
      BOOST_TEST(std::fabs(got[size_t(i * 4 + j)] - want) <= 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(matmul_refuses_a_pointer_less_aligned_than_its_algorithm) {
  LtCase lt(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 4);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  BOOST_REQUIRE(lt.heuristic(result, found) == CUBLAS_STATUS_SUCCESS);  // default: 256 bytes
  BOOST_REQUIRE(found == 1);
  DeviceArray<float> buffer(std::vector<float>(64, 1.f));
  const float alpha = 1, beta = 0;
  float* base = buffer.data;
  BOOST_TEST(cublasLtMatmul(lt.lt, lt.op, &alpha, base, lt.a, base + 16, lt.b, &beta, base + 32,
                            lt.c, base + 32, lt.c, &result.algo, nullptr, 0,
                            nullptr) == CUBLAS_STATUS_INVALID_VALUE);  // B, C at 64 bytes
  lt.align_all(4);
  BOOST_REQUIRE(lt.heuristic(result, found) == CUBLAS_STATUS_SUCCESS);
  BOOST_TEST(cublasLtMatmul(lt.lt, lt.op, &alpha, base + 1, lt.a, base + 17, lt.b, &beta, base + 33,
                            lt.c, base + 33, lt.c, &result.algo, nullptr, 0,
                            nullptr) == CUBLAS_STATUS_SUCCESS);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(buffer.to_host()[33] == 4.f);
}

BOOST_AUTO_TEST_CASE(heuristic_offers_nothing_for_alignment_below_an_element_or_foreign_types) {
  LtCase bf(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 4, 4, 4);
  cublasLtMatmulHeuristicResult_t result{};
  int found = -1;
  bf.align_all(1);
  BOOST_TEST(bf.heuristic(result, found) == CUBLAS_STATUS_NOT_SUPPORTED);
  BOOST_TEST(found == 0);
  bf.align_all(2);
  BOOST_TEST(bf.heuristic(result, found) == CUBLAS_STATUS_SUCCESS);
  BOOST_TEST(found == 1);
  // bf16 inputs with tensor-core math on fp32 inputs only: no such combination.
  LtCase fast(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F_FAST_16BF, 4, 4, 4);
  BOOST_TEST(fast.heuristic(result, found) == CUBLAS_STATUS_NOT_SUPPORTED);
  // Shapes that do not multiply: A 4×4 but B declared 5×4.
  LtCase odd(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 4);
  cublasLtMatrixLayoutDestroy(odd.b);
  BOOST_REQUIRE(cublasLtMatrixLayoutCreate(&odd.b, CUDA_R_32F, 5, 4, 5) == CUBLAS_STATUS_SUCCESS);
  BOOST_TEST(odd.heuristic(result, found) == CUBLAS_STATUS_INVALID_VALUE);
}

BOOST_AUTO_TEST_CASE(products_run_in_stream_order_and_read_host_scalars_at_the_call) {
  // x is all ones; stream `writer` clears it; a product on stream `reader` reads it. Without an
  // event wait the emulated device runs the product first (a missing wait shows as stale
  // values); with the wait, after the clear. alpha is read at the call, as cuBLAS reads host
  // scalars, so changing it before the stream runs changes nothing.
  cudaStream_t writer = nullptr, reader = nullptr;
  cudaEvent_t cleared = nullptr;
  BOOST_REQUIRE(cudaStreamCreate(&writer) == cudaSuccess);
  BOOST_REQUIRE(cudaStreamCreate(&reader) == cudaSuccess);
  BOOST_REQUIRE(cudaEventCreate(&cleared) == cudaSuccess);
  LtCase lt(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 4);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  BOOST_REQUIRE(lt.heuristic(result, found) == CUBLAS_STATUS_SUCCESS);
  DeviceArray<float> x(std::vector<float>(16, 1.f)), identity(std::vector<float>(16, 0.f));
  DeviceArray<float> stale(std::vector<float>(16, -1.f)), fresh(std::vector<float>(16, -1.f));
  std::vector<float> eye(16, 0.f);
  for (int i = 0; i < 4; ++i) eye[size_t(i * 5)] = 1.f;
  BOOST_REQUIRE(cudaMemcpy(identity.data, eye.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess);
  float alpha = 2.f;
  const float beta = 0.f;
  BOOST_REQUIRE(cudaMemsetAsync(x.data, 0, 64, writer) == cudaSuccess);
  BOOST_REQUIRE(cublasLtMatmul(lt.lt, lt.op, &alpha, x.data, lt.a, identity.data, lt.b, &beta,
                               stale.data, lt.c, stale.data, lt.c, &result.algo, nullptr, 0,
                               reader) == CUBLAS_STATUS_SUCCESS);
  alpha = 5.f;
  BOOST_REQUIRE(cudaStreamSynchronize(reader) == cudaSuccess);
  BOOST_REQUIRE(cudaEventRecord(cleared, writer) == cudaSuccess);
  BOOST_REQUIRE(cudaStreamWaitEvent(reader, cleared, 0) == cudaSuccess);
  BOOST_REQUIRE(cublasLtMatmul(lt.lt, lt.op, &alpha, x.data, lt.a, identity.data, lt.b, &beta,
                               fresh.data, lt.c, fresh.data, lt.c, &result.algo, nullptr, 0,
                               reader) == CUBLAS_STATUS_SUCCESS);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(stale.to_host() == std::vector<float>(16, 2.f), boost::test_tools::per_element());
  BOOST_TEST(fresh.to_host() == std::vector<float>(16, 0.f), boost::test_tools::per_element());
  cudaEventDestroy(cleared);
  cudaStreamDestroy(writer);
  cudaStreamDestroy(reader);
}

BOOST_AUTO_TEST_CASE(a_captured_product_runs_at_each_replay_with_the_scalars_of_the_capture) {
  // Captured into a CUDA graph, the product is recorded, not run; each launch of the graph runs
  // it on the values x holds then, with alpha as it was at the capture.
  cudaStream_t stream = nullptr;
  BOOST_REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  LtCase lt(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 4);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  BOOST_REQUIRE(lt.heuristic(result, found) == CUBLAS_STATUS_SUCCESS);
  std::vector<float> eye(16, 0.f);
  for (int i = 0; i < 4; ++i) eye[size_t(i * 5)] = 1.f;
  DeviceArray<float> x(std::vector<float>(16, 1.f)), identity(eye), y(std::vector<float>(16, 0.f));
  float alpha = 3.f;
  const float beta = 0.f;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  BOOST_REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  BOOST_REQUIRE(cublasLtMatmul(lt.lt, lt.op, &alpha, x.data, lt.a, identity.data, lt.b, &beta,
                               y.data, lt.c, y.data, lt.c, &result.algo, nullptr, 0,
                               stream) == CUBLAS_STATUS_SUCCESS);
  BOOST_REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  BOOST_REQUIRE(cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess);
  alpha = 100.f;
  BOOST_REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  BOOST_TEST(y.to_host() == std::vector<float>(16, 0.f), boost::test_tools::per_element());
  for (float value : {2.f, 5.f}) {
    BOOST_REQUIRE(cudaMemcpy(x.data, std::vector<float>(16, value).data(), 64,
                             cudaMemcpyHostToDevice) == cudaSuccess);
    BOOST_REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
    BOOST_REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    BOOST_TEST(y.to_host() == std::vector<float>(16, 3.f * value),
               boost::test_tools::per_element());
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Last: the device fault leaves the emulated device's error state behind, as a real one would.
BOOST_AUTO_TEST_CASE(an_operand_past_its_allocation_is_a_device_fault) {
  DeviceArray<float> small(std::vector<float>(12, 1.f)), c(std::vector<float>(16, 0.f));
  db::cuda::GemmHandle handle(0, false);
  // B is [4, 4] = 16 floats, but its allocation holds 12.
  db::cuda::gemm(handle, false, false, 4, 4, 4, 1.f, c.data, 4, small.data, 4, 0.f, c.data, 4);
  BOOST_TEST(cudaDeviceSynchronize() != cudaSuccess);
}
