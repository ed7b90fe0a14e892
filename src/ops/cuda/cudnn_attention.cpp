#include "ops/cuda/cudnn_attention.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "ops/cuda/cuda_check.hpp"

#ifdef DEPTHBENCH_HAVE_CUDNN
#include <cmath>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

#include "ops/cuda/cudnn_library.hpp"
#include "ops/cuda/scratch_buffer.hpp"
#endif

namespace db::cuda {
namespace {

// The full shape a plan is built for: B, T, H, H_kv, the head dim and the padded head dim the
// tensors have (the padding follows from the head dim today; keyed anyway, so that a change of
// the padding rule cannot make two shapes share a plan).
using ShapeKey = std::tuple<int64_t, int, int, int, int, int>;

[[maybe_unused]] ShapeKey key_of(const AttentionShape& s) {
  return {s.batch,    s.seq_len,  s.heads,
          s.kv_heads, s.head_dim, CudnnAttention::padded_head_dim(s.head_dim)};
}

std::atomic<int64_t> graph_builds{0};  // for the test of the process-wide cache

std::string describe(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq_len) +
         " H=" + std::to_string(s.heads) + " H_kv=" + std::to_string(s.kv_heads) +
         " hd=" + std::to_string(s.head_dim);
}

#ifdef DEPTHBENCH_HAVE_CUDNN

// RAII owner of one backend descriptor; every call checked.
class Descriptor {
 public:
  Descriptor(const CudnnLibrary& lib, cudnnBackendDescriptorType_t type) : lib_(&lib) {
    CUDNN_CHECK(lib.BackendCreateDescriptor(type, &raw_));
  }
  ~Descriptor() {
    if (raw_) lib_->BackendDestroyDescriptor(raw_);
  }
  Descriptor(Descriptor&& other) noexcept
      : lib_(other.lib_), raw_(std::exchange(other.raw_, nullptr)) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const { return raw_; }

  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                  const void* values) {
    const CudnnLibrary& lib = *lib_;
    CUDNN_CHECK(lib.BackendSetAttribute(raw_, name, type, count, values));
    return *this;
  }
  Descriptor& set(cudnnBackendAttributeName_t name, const Descriptor& d) {
    cudnnBackendDescriptor_t value = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnDataType_t type) {
    return set(name, CUDNN_TYPE_DATA_TYPE, 1, &type);
  }
  Descriptor& set(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
    return set(name, CUDNN_TYPE_INT64, int64_t(values.size()), values.data());
  }
  void finalize() {
    const CudnnLibrary& lib = *lib_;
    CUDNN_CHECK(lib.BackendFinalize(raw_));
  }

 private:
  const CudnnLibrary* lib_;
  cudnnBackendDescriptor_t raw_ = nullptr;
};

struct Layout {
  std::vector<int64_t> dims, strides;
};

// The tensors the variant pack binds; virtual tensors get ids from kFirstVirtual on.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kNegInf,
  kOne,
  kDO,
  kDQ,
  kDK,
  kDV,
  kSoftmaxSum,
  kFirstVirtual = 100
};

// An operation graph under construction: owns every tensor and operation descriptor it refers
// to (they must outlive the finalised graph and its plans).
class Graph {
 public:
  explicit Graph(const CudnnLibrary& lib) : lib_(lib) {}

  const Descriptor& tensor(int64_t uid, cudnnDataType_t type, const Layout& layout,
                           bool is_virtual = false, bool by_value = false) {
    Descriptor& t = keep(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t alignment = 16;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, layout.dims)
        .set(CUDNN_ATTR_TENSOR_STRIDES, layout.strides)
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    t.finalize();
    return t;
  }
  const Descriptor& temporary(cudnnDataType_t type, const Layout& layout) {
    return tensor(next_virtual_++, type, layout, /*is_virtual=*/true);
  }
  // A float the variant pack passes by value (a host pointer).
  const Descriptor& scalar(int64_t uid) {
    return tensor(uid, CUDNN_DATA_FLOAT, {{1, 1, 1, 1}, {1, 1, 1, 1}}, false, /*by_value=*/true);
  }

  // y = mode(x[, b][, t]); axis only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const Descriptor& x,
                 const Descriptor* b, const Descriptor* t, const Descriptor& y, int64_t axis = -1) {
    Descriptor& desc = keep(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, math);
    if (axis >= 0) desc.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    desc.finalize();
    Descriptor& op = keep(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    if (b) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t) op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    const float one = 1.f;  // y = op(1·x, 1·b): unscaled operands
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one)
        .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    add(op);
  }
  // A new fp32 temporary = mode(x, b).
  const Descriptor& binary(cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor& b,
                           const Layout& layout) {
    const Descriptor& y = temporary(CUDNN_DATA_FLOAT, layout);
    pointwise(mode, CUDNN_DATA_FLOAT, x, &b, nullptr, y);
    return y;
  }
  const Descriptor& unary(cudnnPointwiseMode_t mode, const Descriptor& x, const Layout& layout) {
    const Descriptor& y = temporary(CUDNN_DATA_FLOAT, layout);
    pointwise(mode, CUDNN_DATA_FLOAT, x, nullptr, nullptr, y);
    return y;
  }
  // Causal mask of scores [.., rows, cols]: keep where row ≥ column, else neg_inf. Built from
  // index generation, a compare and a select: the pattern cuDNN's fused engines recognise.
  const Descriptor& causal_mask(const Descriptor& scores, const Descriptor& neg_inf,
                                const Layout& layout) {
    const Descriptor& row = temporary(CUDNN_DATA_INT32, layout);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, row, 2);
    const Descriptor& col = temporary(CUDNN_DATA_INT32, layout);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, col, 3);
    const Descriptor& keep_it = temporary(CUDNN_DATA_BOOLEAN, layout);
    pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, nullptr, keep_it);
    const Descriptor& masked = temporary(CUDNN_DATA_FLOAT, layout);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, &neg_inf, &keep_it, masked);
    return masked;
  }
  void matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c) {
    Descriptor& desc = keep(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    desc.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
    Descriptor& op = keep(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
    add(op);
  }
  // y = reduce(x) over the dimensions where y has extent 1 (or a group of heads).
  void reduction(cudnnReduceTensorOp_t op_type, const Descriptor& x, const Descriptor& y) {
    Descriptor& desc = keep(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op_type)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
        .finalize();
    Descriptor& op = keep(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc);
    add(op);
  }
  // The same elements seen through other dimensions and strides (a transpose).
  void reshape(const Descriptor& x, const Descriptor& y) {
    Descriptor& op = keep(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x).set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    add(op);
  }

  const Descriptor& finalize(cudnnHandle_t handle) {
    Descriptor& graph = keep(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops_.size()),
              ops_.data());
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    graph.finalize();
    return graph;
  }

 private:
  Descriptor& keep(cudnnBackendDescriptorType_t type) { return owned_.emplace_back(lib_, type); }
  void add(Descriptor& op) {
    op.finalize();
    ops_.push_back(op.get());
  }

  const CudnnLibrary& lib_;
  std::deque<Descriptor> owned_;  // a deque: references stay valid as it grows
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = kFirstVirtual;
};

// The layouts of one shape (cuDNN's dims are [b, h, s, d]; our memory is [b, s, h, d]).
struct Layouts {
  Layout q, k_transposed, kv, scores, scores_transposed, row_stat, full_head, d_o_times_o;
};

Layouts layouts_of(const AttentionShape& s, int64_t d) {
  const int64_t B = s.batch, H = s.heads, Hk = s.kv_heads, S = s.seq_len;
  Layouts l;
  l.q = {{B, H, S, d}, {S * H * d, d, H * d, 1}};
  l.k_transposed = {{B, Hk, d, S}, {S * Hk * d, d, 1, Hk * d}};
  l.kv = {{B, Hk, S, d}, {S * Hk * d, d, Hk * d, 1}};
  l.scores = {{B, H, S, S}, {H * S * S, S * S, S, 1}};
  l.scores_transposed = {{B, H, S, S}, {H * S * S, S * S, 1, S}};
  l.row_stat = {{B, H, S, 1}, {H * S, S, 1, 1}};  // our lse layout [B, H, T]
  l.full_head = {{B, H, S, d}, {H * S * d, S * d, d, 1}};
  // dO∘O in the layout of its operands ([B, T, H, d]); the strides it had before put distinct
  // elements at one address (found by the emulated device's cuDNN, doc/cuda.md).
  l.d_o_times_o = l.q;
  return l;
}

// Forward: O = softmax(mask(Q·Kᵀ·scale))·V and Stats = max + log Σexp per row.
std::unique_ptr<Graph> forward_graph(const CudnnLibrary& lib, const AttentionShape& s, int64_t d) {
  const Layouts l = layouts_of(s, d);
  auto g = std::make_unique<Graph>(lib);
  const Descriptor& q = g->tensor(kQ, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& kt = g->tensor(kK, CUDNN_DATA_BFLOAT16, l.k_transposed);
  const Descriptor& v = g->tensor(kV, CUDNN_DATA_BFLOAT16, l.kv);
  const Descriptor& o = g->tensor(kO, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& stats = g->tensor(kStats, CUDNN_DATA_FLOAT, l.row_stat);
  const Descriptor& scale = g->scalar(kScale);
  const Descriptor& neg_inf = g->scalar(kNegInf);

  const Descriptor& raw_scores = g->temporary(CUDNN_DATA_FLOAT, l.scores);
  g->matmul(q, kt, raw_scores);
  const Descriptor& scores = g->binary(CUDNN_POINTWISE_MUL, raw_scores, scale, l.scores);
  const Descriptor& masked = g->causal_mask(scores, neg_inf, l.scores);
  const Descriptor& row_max = g->temporary(CUDNN_DATA_FLOAT, l.row_stat);
  g->reduction(CUDNN_REDUCE_TENSOR_MAX, masked, row_max);
  const Descriptor& shifted = g->binary(CUDNN_POINTWISE_SUB, masked, row_max, l.scores);
  const Descriptor& exps = g->unary(CUDNN_POINTWISE_EXP, shifted, l.scores);
  const Descriptor& row_sum = g->temporary(CUDNN_DATA_FLOAT, l.row_stat);
  g->reduction(CUDNN_REDUCE_TENSOR_ADD, exps, row_sum);
  const Descriptor& log_sum = g->unary(CUDNN_POINTWISE_LOG, row_sum, l.row_stat);
  g->pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, row_max, &log_sum, nullptr, stats);
  // P in the I/O type: the second product runs on bf16 tensor cores.
  const Descriptor& p = g->temporary(CUDNN_DATA_BFLOAT16, l.scores);
  g->pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, exps, &row_sum, nullptr, p);
  g->matmul(p, v, o);
  return g;
}

// Backward, from the forward's Stats: P = exp(mask(Q·Kᵀ·scale) − Stats); dV = Pᵀ·dO;
// dS = P ∘ (dO·Vᵀ − rowsum(dO ∘ O))·scale; dK = dSᵀ·Q; dQ = dS·K written directly (the
// deterministic variant: no fp32 dQ accumulator filled by atomics). With GQA, dK and dV are
// computed per query head and summed over each kv head's group.
std::unique_ptr<Graph> backward_graph(const CudnnLibrary& lib, const AttentionShape& s, int64_t d) {
  const Layouts l = layouts_of(s, d);
  const bool grouped = s.kv_heads != s.heads;
  auto g = std::make_unique<Graph>(lib);
  const Descriptor& q = g->tensor(kQ, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& kt = g->tensor(kK, CUDNN_DATA_BFLOAT16, l.k_transposed);
  const Descriptor& vt = g->tensor(kV, CUDNN_DATA_BFLOAT16, l.k_transposed);
  const Descriptor& o = g->tensor(kO, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& d_o = g->tensor(kDO, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& stats = g->tensor(kStats, CUDNN_DATA_FLOAT, l.row_stat);
  const Descriptor& dq = g->tensor(kDQ, CUDNN_DATA_BFLOAT16, l.q);
  const Descriptor& dk = g->tensor(kDK, CUDNN_DATA_BFLOAT16, l.kv);
  const Descriptor& dv = g->tensor(kDV, CUDNN_DATA_BFLOAT16, l.kv);
  const Descriptor& softmax_sum = g->tensor(kSoftmaxSum, CUDNN_DATA_FLOAT, l.row_stat);
  const Descriptor& scale = g->scalar(kScale);
  const Descriptor& neg_inf = g->scalar(kNegInf);
  const Descriptor& one = g->scalar(kOne);

  // softmax_sum = Σ_d dO ∘ O per row (the "× 1" is the dropout-scale slot of the pattern).
  const Descriptor& d_o_o = g->binary(CUDNN_POINTWISE_MUL, d_o, o, l.d_o_times_o);
  const Descriptor& row_dot = g->temporary(CUDNN_DATA_FLOAT, l.row_stat);
  g->reduction(CUDNN_REDUCE_TENSOR_ADD, d_o_o, row_dot);
  g->pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, row_dot, &one, nullptr, softmax_sum);

  const Descriptor& raw_scores = g->temporary(CUDNN_DATA_FLOAT, l.scores);
  g->matmul(q, kt, raw_scores);
  const Descriptor& scores = g->binary(CUDNN_POINTWISE_MUL, raw_scores, scale, l.scores);
  const Descriptor& shifted = g->binary(CUDNN_POINTWISE_SUB, scores, stats, l.scores);
  const Descriptor& masked = g->causal_mask(shifted, neg_inf, l.scores);
  const Descriptor& p = g->unary(CUDNN_POINTWISE_EXP, masked, l.scores);

  const Descriptor& p_t = g->temporary(CUDNN_DATA_BFLOAT16, l.scores_transposed);
  g->reshape(p, p_t);
  if (grouped) {
    const Descriptor& dv_heads = g->temporary(CUDNN_DATA_BFLOAT16, l.full_head);
    g->matmul(p_t, d_o, dv_heads);
    g->reduction(CUDNN_REDUCE_TENSOR_ADD, dv_heads, dv);
  } else {
    g->matmul(p_t, d_o, dv);
  }

  const Descriptor& dp = g->temporary(CUDNN_DATA_FLOAT, l.scores);
  g->matmul(d_o, vt, dp);
  const Descriptor& centred = g->binary(CUDNN_POINTWISE_SUB, dp, softmax_sum, l.scores);
  const Descriptor& ds_unscaled = g->binary(CUDNN_POINTWISE_MUL, centred, p, l.scores);
  const Descriptor& ds = g->binary(CUDNN_POINTWISE_MUL, ds_unscaled, scale, l.scores);

  const Descriptor& ds_t = g->temporary(CUDNN_DATA_BFLOAT16, l.scores_transposed);
  g->reshape(ds, ds_t);
  if (grouped) {
    const Descriptor& dk_heads = g->temporary(CUDNN_DATA_BFLOAT16, l.full_head);
    g->matmul(ds_t, q, dk_heads);
    g->reduction(CUDNN_REDUCE_TENSOR_ADD, dk_heads, dk);
  } else {
    g->matmul(ds_t, q, dk);
  }

  const Descriptor& k = g->temporary(CUDNN_DATA_BFLOAT16, l.kv);
  g->reshape(kt, k);
  g->matmul(ds, k, dq);
  return g;
}

bool is_nondeterministic(const CudnnLibrary& lib, const Descriptor& config) {
  Descriptor engine(lib, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = 0;
  if (lib.BackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                              &raw) != CUDNN_STATUS_SUCCESS)
    return false;  // no notes to read: the graph's topology is what makes it deterministic
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (lib.BackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                              CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                              notes) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < count; ++i)
    if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return true;
  return false;
}

// A finalised execution plan with what it was built from: the graph and the engine
// configuration live as long as the plan (cudnn-frontend keeps both too; the backend API does
// not promise that a plan copies what its configuration refers to). Members are destroyed in
// reverse order: the plan first.
struct Plan {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Descriptor> engine_config;
  std::unique_ptr<Descriptor> plan;
  int64_t workspace_bytes = 0;
};

// The first engine configuration of cuDNN's heuristics (mode A, then the fallback list) that
// finalises, skipping those marked non-deterministic. db::Error when none does.
Plan build_plan(const CudnnLibrary& lib, cudnnHandle_t handle, std::unique_ptr<Graph> graph) {
  const Descriptor& op_graph = graph->finalize(handle);
  std::string last_refusal = "no engine configuration offered";
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heuristics(lib, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnStatus_t st = lib.BackendFinalize(heuristics.get()); st != CUDNN_STATUS_SUCCESS) {
      last_refusal = cudnn_error_message(lib, st, "the engine heuristics");
      continue;
    }
    int64_t count = 0;
    CUDNN_CHECK(lib.BackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      raw.push_back(configs.emplace_back(lib, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
    }
    CUDNN_CHECK(lib.BackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()));
    for (int64_t i = 0; i < count; ++i) {
      if (is_nondeterministic(lib, configs[i])) {
        last_refusal = "only non-deterministic engines";
        continue;
      }
      auto plan = std::make_unique<Descriptor>(lib, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
      if (cudnnStatus_t st = lib.BackendFinalize(plan->get()); st != CUDNN_STATUS_SUCCESS) {
        last_refusal = cudnn_error_message(lib, st, "the execution plan");
        continue;
      }
      Plan built;
      int64_t returned = 0;
      CUDNN_CHECK(lib.BackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &returned, &built.workspace_bytes));
      built.graph = std::move(graph);
      built.engine_config = std::make_unique<Descriptor>(std::move(configs[i]));
      built.plan = std::move(plan);
      return built;
    }
  }
  throw ::db::Error("no cuDNN engine runs this graph: " + last_refusal);
}

// The plans of one shape, or why cuDNN refused it.
struct ShapePlans {
  Plan forward, backward;
  std::string refusal;  // "" when both plans exist
};

// One cuDNN handle and one plan cache per process and device, shared by every CudnnAttention
// (each Model's ops, each test case, each run of a sweep): a shape's plans, which take seconds
// to build, are built once per process, and a refusal is remembered once. Created on first use
// and deliberately never destroyed: at exit the CUDA runtime may already be gone, and the driver
// frees what a process leaves. The mutex guards the maps; the executions on a device's handle
// come from the one thread that drives that device (as the ops objects always did).
struct DeviceCache {
  cudnnHandle_t handle = nullptr;
  std::map<ShapeKey, ShapePlans> shapes;  // a map: references stay valid as it grows
};

struct ProcessCache {
  std::mutex mutex;
  bool opened = false;
  const CudnnLibrary* lib = nullptr;
  std::string unavailable;  // why cuDNN cannot run at all
  std::map<int, DeviceCache> devices;
};

ProcessCache& process_cache() {
  static ProcessCache* cache = new ProcessCache;  // never destroyed: see above
  return *cache;
}

// The device current on this thread; -1 without one (the test without a GPU).
int current_device() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

}  // namespace

struct CudnnAttention::Impl {
  const CudnnLibrary* lib = nullptr;
  DeviceCache* device = nullptr;  // this object's device's entry of the process cache

  const ShapePlans& plans_of(const AttentionShape& s) {
    CUDA_REQUIRE(device != nullptr,
                 "cuDNN attention: no plan for " + describe(s) + " (prepare it first)");
    std::lock_guard lock(process_cache().mutex);
    auto it = device->shapes.find(key_of(s));
    CUDA_REQUIRE(it != device->shapes.end() && it->second.refusal.empty(),
                 "cuDNN attention: no plan for " + describe(s) + " (prepare it first)");
    return it->second;
  }

  // −∞ as the mask value; cuDNN before 9.10 wants the lowest finite float instead.
  float mask_value() const {
    return lib->GetVersion() < 91000 ? std::numeric_limits<float>::lowest()
                                     : -std::numeric_limits<float>::infinity();
  }

  void execute(const Plan& plan, const std::vector<int64_t>& uids, std::vector<void*> pointers,
               cudaStream_t stream) {
    const CudnnLibrary& lib = *this->lib;
    cudnnHandle_t handle = device->handle;
    CUDNN_CHECK(lib.SetStream(handle, stream));
    ScratchBuffer<char> workspace(size_t(plan.workspace_bytes), stream);
    void* workspace_pointer = workspace.data();
    Descriptor pack(lib, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(pointers.size()),
             pointers.data())
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_pointer);
    pack.finalize();
    CUDNN_CHECK(lib.BackendExecute(handle, plan.plan->get(), pack.get()));
  }
};

std::string cudnn_description() {
  std::string why;
  const CudnnLibrary* lib = cudnn_library(&why);
  if (!lib) return "unavailable: " + why;
  const size_t v = lib->GetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100) + " (" + lib->path + ")";
}

CudnnAttention::CudnnAttention() : impl_(std::make_unique<Impl>()) {}

CudnnAttention::~CudnnAttention() = default;

std::string CudnnAttention::prepare(const AttentionShape& s) {
  Impl& m = *impl_;
  ProcessCache& cache = process_cache();
  std::lock_guard lock(cache.mutex);
  if (!cache.opened) {  // opened by the first shape that asks, in the whole process
    cache.lib = cudnn_library(&cache.unavailable);
    cache.opened = true;
  }
  if (!cache.lib) return "cuDNN unavailable: " + cache.unavailable;
  m.lib = cache.lib;
  m.device = &cache.devices[current_device()];
  auto [it, inserted] = m.device->shapes.try_emplace(key_of(s));
  ShapePlans& plans = it->second;
  if (!inserted) return plans.refusal;
  try {
    const CudnnLibrary& lib = *m.lib;
    // The graphs' descriptors need no device: built first, a malformed graph shows even on a
    // machine without a GPU (the test there), before the handle fails.
    const int64_t d = padded_head_dim(s.head_dim);
    ++graph_builds;
    std::unique_ptr<Graph> forward = forward_graph(lib, s, d);
    std::unique_ptr<Graph> backward = backward_graph(lib, s, d);
    if (!m.device->handle) CUDNN_CHECK(lib.Create(&m.device->handle));
    plans.forward = build_plan(lib, m.device->handle, std::move(forward));
    plans.backward = build_plan(lib, m.device->handle, std::move(backward));
  } catch (const std::exception& e) {
    plans.refusal = "cuDNN refused " + describe(s) + ": " + e.what();
  }
  return plans.refusal;
}

int64_t CudnnAttention::graph_builds_in_process() {
  return graph_builds.load();
}

namespace {
// cuDNN's tensors promise 16-byte alignment; a statistics pointer that is not gets a copy.
bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
}  // namespace

void CudnnAttention::check_not_failed_for_test(const AttentionShape& s) const {
  CUDA_REQUIRE(!fail_executions_,
               "cuDNN attention: execution of " + describe(s) + " failed as a test asked");
}

void CudnnAttention::forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             const AttentionShape& s, cudaStream_t stream) {
  check_not_failed_for_test(s);
  Impl& m = *impl_;
  const Plan& plan = m.plans_of(s).forward;
  float scale = float(1.0 / std::sqrt(double(s.head_dim)));
  float mask = m.mask_value();
  const size_t lse_count = size_t(s.batch) * s.heads * s.seq_len;
  ScratchBuffer<float> lse_copy(aligned16(lse) ? 0 : lse_count, stream);
  float* stats = aligned16(lse) ? lse : lse_copy.data();
  m.execute(
      plan, {kQ, kK, kV, kO, kStats, kScale, kNegInf},
      {const_cast<bf16*>(q), const_cast<bf16*>(k), const_cast<bf16*>(v), o, stats, &scale, &mask},
      stream);
  if (stats != lse)
    CUDA_CHECK(
        cudaMemcpyAsync(lse, stats, lse_count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void CudnnAttention::backward(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v,
                              const AttentionShape& s, cudaStream_t stream) {
  check_not_failed_for_test(s);
  Impl& m = *impl_;
  const Plan& plan = m.plans_of(s).backward;
  float scale = float(1.0 / std::sqrt(double(s.head_dim)));
  float mask = m.mask_value();
  float one = 1.f;
  const size_t row_count = size_t(s.batch) * s.heads * s.seq_len;
  ScratchBuffer<float> softmax_sum(row_count, stream);
  ScratchBuffer<float> lse_copy(aligned16(lse) ? 0 : row_count, stream);
  const float* stats = lse;
  if (!aligned16(lse)) {
    CUDA_CHECK(cudaMemcpyAsync(lse_copy.data(), lse, row_count * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream));
    stats = lse_copy.data();
  }
  m.execute(plan, {kQ, kK, kV, kO, kStats, kScale, kNegInf, kOne, kDO, kDQ, kDK, kDV, kSoftmaxSum},
            {const_cast<bf16*>(q), const_cast<bf16*>(k), const_cast<bf16*>(v), const_cast<bf16*>(o),
             const_cast<float*>(stats), &scale, &mask, &one, const_cast<bf16*>(d_o), dq, dk, dv,
             softmax_sum.data()},
            stream);
}

#else  // without cuDNN in the build: every shape is refused, so `auto` moves on.

}  // namespace

struct CudnnAttention::Impl {};

std::string cudnn_description() {
  return "unavailable: this build did not find the cuDNN headers";
}

CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;

std::string CudnnAttention::prepare(const AttentionShape&) {
  return "cuDNN unavailable: this build did not find the cuDNN headers";
}

int64_t CudnnAttention::graph_builds_in_process() {
  return 0;
}

void CudnnAttention::forward(bf16*, float*, const bf16*, const bf16*, const bf16*,
                             const AttentionShape& s, cudaStream_t) {
  throw ::db::Error("cuDNN attention: not built (" + describe(s) + ")");
}

void CudnnAttention::backward(bf16*, bf16*, bf16*, const bf16*, const bf16*, const float*,
                              const bf16*, const bf16*, const bf16*, const AttentionShape& s,
                              cudaStream_t) {
  throw ::db::Error("cuDNN attention: not built (" + describe(s) + ")");
}

#endif  // DEPTHBENCH_HAVE_CUDNN

}  // namespace db::cuda
