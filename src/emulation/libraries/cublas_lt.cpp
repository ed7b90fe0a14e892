// cuBLASLt and cuBLAS by contract (emulation only): the subset src/ops/cuda/gemm.cu uses, with
// the signatures of the real cublasLt.h and cublas_api.h. Descriptors keep what was set; the
// heuristic offers one algorithm or refuses what cuBLASLt refuses (unsupported type
// combinations, a declared alignment below the element size, inconsistent shapes); the product
// runs when the stream reaches it, on the host: OpenBLAS sgemm, i.e. fp32 products with fp32
// accumulation (bf16 operands widened exactly, COMPUTE_32F_FAST_16BF rounds fp32 operands to
// bf16 first as the tensor cores do, bf16 results rounded to nearest even). Every operand is
// checked against the device allocations over its whole extent at that time (a DeviceFault
// naming the call and the operand), and a pointer less aligned than the algorithm was chosen
// for is refused at the call, as cuBLASLt refuses it.
#include <cblas.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "emulation/libraries/host_values.hpp"
#include "emulation/runtime/stream_work.hpp"

namespace db::emulation {
namespace {

constexpr uint64_t kMagic = 0x4c54454d55ull;  // "LTEMU": an algorithm this emulation made

struct LtContext {
  bool alive = true;
};

struct BlasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t order = CUBLASLT_ORDER_COL;
  int32_t batch_count = 1;
};

struct MatmulDesc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N, trans_c = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

struct Preference {
  uint64_t max_workspace_bytes = 0;
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D: cuBLASLt's default
};

// What the algorithm remembers: the alignments (bytes) it assumes of A, B, C, D.
struct AlgoData {
  uint64_t magic;
  uint64_t alignment[4];
};
static_assert(sizeof(AlgoData) <= sizeof(cublasLtMatmulAlgo_t));

template <class T, class Opaque>
T* as(Opaque* opaque) {
  return reinterpret_cast<T*>(opaque);
}

size_t element_bytes(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F:
      return 4;
    case CUDA_R_16BF:
    case CUDA_R_16F:
      return 2;
    case CUDA_R_64F:
      return 8;
    default:
      return 0;
  }
}

// Type combinations of the subset (cuBLASLt's table of supported types, the rows we use).
bool supported_types(cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t ab,
                     cudaDataType_t c) {
  if (scale != CUDA_R_32F) return false;
  if (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC)
    return (ab == CUDA_R_32F && c == CUDA_R_32F) ||
           (ab == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F));
  if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) return ab == CUDA_R_32F && c == CUDA_R_32F;
  return false;
}

// One column-major matrix as the product reads it.
struct Operand {
  const void* data;
  cudaDataType_t type;
  int64_t rows, cols, ld;
  size_t extent_bytes() const {
    if (rows == 0 || cols == 0) return 0;
    return size_t((cols - 1) * ld + rows) * element_bytes(type);
  }
};

// The whole operand in fp32, column-major with leading dimension `rows` (bf16 widened exactly;
// round_inputs: fp32 values rounded to bf16 as 32F_FAST_16BF does).
std::vector<float> widen(const Operand& m, bool round_inputs) {
  std::vector<float> out(size_t(m.rows * m.cols));
  for (int64_t j = 0; j < m.cols; ++j)
    for (int64_t i = 0; i < m.rows; ++i) {
      const int64_t at = j * m.ld + i;
      float v = m.type == CUDA_R_16BF ? bf16_bits_to_float(static_cast<const uint16_t*>(m.data)[at])
                                      : static_cast<const float*>(m.data)[at];
      out[size_t(j * m.rows + i)] = round_inputs ? round_to_bf16(v) : v;
    }
  return out;
}

// D = alpha·op(A)·op(B) + beta·C on the host, when the stream runs it. C is not read when
// beta = 0 (BLAS's rule, so NaN in an unwritten C does not leak).
void run_product(const char* call, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, Operand A, Operand B, float beta, Operand C, void* D,
                 bool round_inputs) {
  require_device_range(call, "A", A.data, A.extent_bytes());
  require_device_range(call, "B", B.data, B.extent_bytes());
  if (beta != 0.f) require_device_range(call, "C", C.data, C.extent_bytes());
  Operand out = C;
  out.data = D;
  require_device_range(call, "D", D, out.extent_bytes());
  if (m == 0 || n == 0) return;
  std::vector<float> acc(size_t(m * n), 0.f);
  if (beta != 0.f) acc = widen(C, false);
  if (k > 0 && alpha != 0.f) {
    const std::vector<float> a = widen(A, round_inputs), b = widen(B, round_inputs);
    cblas_sgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha, a.data(),
                int(A.rows), b.data(), int(B.rows), beta, acc.data(), int(m));
  } else {
    for (float& v : acc) v *= beta;
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const float v = acc[size_t(j * m + i)];
      const int64_t at = j * out.ld + i;
      if (out.type == CUDA_R_16BF)
        static_cast<uint16_t*>(D)[at] = float_to_bf16_bits(v);
      else
        static_cast<float*>(D)[at] = v;
    }
}

// Largest power of two (≤ 256) dividing the address.
uint64_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint64_t align = 256;
  while (align > 1 && a % align != 0) align >>= 1;
  return align;
}

template <class T>
cublasStatus_t set_value(T& field, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

// The shapes of a matmul: op(A) m×k, op(B) k×n, C and D m×n; INVALID_VALUE when they disagree.
cublasStatus_t check_shapes(const MatmulDesc& d, const Layout& a, const Layout& b, const Layout& c,
                            const Layout& dl, int64_t& m, int64_t& n, int64_t& k) {
  for (const Layout* l : {&a, &b, &c, &dl})
    if (l->order != CUBLASLT_ORDER_COL || l->batch_count != 1 || l->ld < int64_t(l->rows) ||
        l->ld < 1)
      return CUBLAS_STATUS_INVALID_VALUE;
  m = int64_t(d.trans_a == CUBLAS_OP_N ? a.rows : a.cols);
  k = int64_t(d.trans_a == CUBLAS_OP_N ? a.cols : a.rows);
  const int64_t kb = int64_t(d.trans_b == CUBLAS_OP_N ? b.rows : b.cols);
  n = int64_t(d.trans_b == CUBLAS_OP_N ? b.cols : b.rows);
  if (k != kb || int64_t(c.rows) != m || int64_t(c.cols) != n || dl.rows != c.rows ||
      dl.cols != c.cols || dl.type != c.type || dl.ld != c.ld)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (a.type != b.type) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t submit(cudaStream_t stream, const char* call, std::function<void()> work) {
  return enqueue(stream, call, std::move(work)) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                               : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace
}  // namespace db::emulation

using namespace db::emulation;

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasLtHandle_t>(new LtContext);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete reinterpret_cast<LtContext*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                        cublasComputeType_t compute_type,
                                        cudaDataType_t scale_type) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new MatmulDesc;
  d->compute = compute_type;
  d->scale = scale_type;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete as<MatmulDesc>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  if (!desc) return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulDesc& d = *as<MatmulDesc>(desc);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      return set_value(d.compute, buf, size);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      return set_value(d.scale, buf, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return set_value(d.pointer_mode, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return set_value(d.trans_a, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return set_value(d.trans_b, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSC:
      return set_value(d.trans_c, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return set_value(d.epilogue, buf, size);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;  // outside the emulated subset
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new Layout;
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete as<Layout>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (!layout) return CUBLAS_STATUS_NOT_INITIALIZED;
  Layout& l = *as<Layout>(layout);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      return set_value(l.type, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      return set_value(l.order, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      return set_value(l.rows, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      return set_value(l.cols, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_LD:
      return set_value(l.ld, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return set_value(l.batch_count, buf, size);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete as<Preference>(pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  if (!pref) return CUBLAS_STATUS_NOT_INITIALIZED;
  Preference& p = *as<Preference>(pref);
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return set_value(p.max_workspace_bytes, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      return set_value(p.min_alignment[0], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      return set_value(p.min_alignment[1], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      return set_value(p.min_alignment[2], buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return set_value(p.min_alignment[3], buf, size);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

// One algorithm, which needs no workspace and assumes each operand aligned as the preference
// declares. None (NOT_SUPPORTED, zero found) for types outside the table or a declared
// alignment below an element; INVALID_VALUE for inconsistent shapes.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle,
                                              cublasLtMatmulDesc_t operation,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* found) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!operation || !a || !b || !c || !d || !preference || !results || !found || requested <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  *found = 0;
  const MatmulDesc& op = *as<MatmulDesc>(operation);
  const Layout &la = *as<Layout>(a), &lb = *as<Layout>(b), &lc = *as<Layout>(c),
               &ld = *as<Layout>(d);
  const Preference& pref = *as<Preference>(preference);
  int64_t m, n, k;
  if (cublasStatus_t st = check_shapes(op, la, lb, lc, ld, m, n, k); st != CUBLAS_STATUS_SUCCESS)
    return st;
  if (!supported_types(op.compute, op.scale, la.type, lc.type) ||
      op.pointer_mode != CUBLASLT_POINTER_MODE_HOST || op.epilogue != CUBLASLT_EPILOGUE_DEFAULT ||
      op.trans_c != CUBLAS_OP_N)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const size_t sizes[4] = {element_bytes(la.type), element_bytes(lb.type), element_bytes(lc.type),
                           element_bytes(ld.type)};
  AlgoData algo{kMagic, {}};
  for (int i = 0; i < 4; ++i) {
    if (pref.min_alignment[i] < sizes[i]) return CUBLAS_STATUS_NOT_SUPPORTED;
    algo.alignment[i] = pref.min_alignment[i];
  }
  results[0] = cublasLtMatmulHeuristicResult_t{};
  std::memcpy(&results[0].algo, &algo, sizeof algo);
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t operation,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t a,
                              const void* B, cublasLtMatrixLayout_t b, const void* beta,
                              const void* C, cublasLtMatrixLayout_t c, void* D,
                              cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!operation || !a || !b || !c || !d || !alpha || !beta || !algo)
    return CUBLAS_STATUS_INVALID_VALUE;  // our subset always passes the heuristic's algorithm
  const MatmulDesc& op = *as<MatmulDesc>(operation);
  const Layout &la = *as<Layout>(a), &lb = *as<Layout>(b), &lc = *as<Layout>(c),
               &ld = *as<Layout>(d);
  int64_t m, n, k;
  if (cublasStatus_t st = check_shapes(op, la, lb, lc, ld, m, n, k); st != CUBLAS_STATUS_SUCCESS)
    return st;
  if (!supported_types(op.compute, op.scale, la.type, lc.type) ||
      op.pointer_mode != CUBLASLT_POINTER_MODE_HOST || op.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  AlgoData chosen;
  std::memcpy(&chosen, algo, sizeof chosen);
  if (chosen.magic != kMagic) return CUBLAS_STATUS_INVALID_VALUE;
  const void* pointers[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if (alignment_of(pointers[i]) < std::min<uint64_t>(chosen.alignment[i], 256))
      return CUBLAS_STATUS_INVALID_VALUE;  // the algorithm's vector loads need that alignment
  // Host pointer mode: the scalars are read now, as the real call passes them to its kernel.
  const float alpha_value = *static_cast<const float*>(alpha);
  const float beta_value = *static_cast<const float*>(beta);
  const bool round_inputs = op.compute == CUBLAS_COMPUTE_32F_FAST_16BF;
  const Operand oa{A, la.type, int64_t(la.rows), int64_t(la.cols), la.ld};
  const Operand ob{B, lb.type, int64_t(lb.rows), int64_t(lb.cols), lb.ld};
  const Operand oc{C, lc.type, int64_t(lc.rows), int64_t(lc.cols), lc.ld};
  const bool trans_a = op.trans_a != CUBLAS_OP_N, trans_b = op.trans_b != CUBLAS_OP_N;
  return submit(stream, "cublasLtMatmul", [=] {
    if (workspace_bytes > 0)
      require_device_range("cublasLtMatmul", "workspace", workspace, workspace_bytes);
    run_product("cublasLtMatmul", trans_a, trans_b, m, n, k, alpha_value, oa, ob, beta_value, oc, D,
                round_inputs);
  });
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  return cublasGetStatusString(status);
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasHandle_t>(new BlasContext);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete reinterpret_cast<BlasContext*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<BlasContext*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<BlasContext*>(handle)->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

// C = alpha·op(A)·op(B) + beta·C, column-major, any leading dimensions ≥ the rows.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t /*algo*/) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  const BlasContext& h = *reinterpret_cast<BlasContext*>(handle);
  if (m < 0 || n < 0 || k < 0 || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  const int a_rows = ta ? k : m, b_rows = tb ? n : k;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (Atype != Btype || !supported_types(compute, CUDA_R_32F, Atype, Ctype))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const float alpha_value = *static_cast<const float*>(alpha);
  const float beta_value = *static_cast<const float*>(beta);
  const Operand oa{A, Atype, a_rows, ta ? m : k, lda};
  const Operand ob{B, Btype, b_rows, tb ? k : n, ldb};
  const Operand oc{C, Ctype, m, n, ldc};
  const bool round_inputs = compute == CUBLAS_COMPUTE_32F_FAST_16BF;
  return submit(h.stream, "cublasGemmEx", [=] {
    run_product("cublasGemmEx", ta, tb, m, n, k, alpha_value, oa, ob, beta_value, oc, C,
                round_inputs);
  });
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "an error detected when checking the current licensing";
    default:
      return "unknown error";
  }
}

}  // extern "C"
