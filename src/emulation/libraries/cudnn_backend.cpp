// cuDNN 9's backend API on the host (emulation only), with the signatures of the real
// cudnn_graph.h. Descriptors keep their attributes; Finalize checks what cuDNN checks (the
// required attributes, the attribute types, dims against strides, shapes that connect), has the
// real cuDNN finalise the same descriptor where it can be loaded, and freezes the content
// (cudnn_graph.hpp), so a finalised descriptor does not depend on the descriptors it was built
// from. The heuristics offer one engine configuration; Execute checks the variant pack as cuDNN
// does and enqueues the graph's interpretation (cudnn_interpreter.cpp) on the handle's stream.
#include "emulation/libraries/cudnn_backend.hpp"

#include <cuda_runtime.h>
#include <cudnn_graph.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulation/libraries/cudnn_graph.hpp"
#include "emulation/libraries/host_values.hpp"
#include "emulation/runtime/stream_work.hpp"

namespace db::emulation {
namespace {

using namespace cudnn;  // the frozen content of finalised descriptors (cudnn_graph.hpp)

thread_local std::string last_error;

cudnnStatus_t refuse(cudnnStatus_t code, const std::string& why) {
  last_error = why;
  return code;
}

struct Handle {
  cudaStream_t stream = nullptr;
};

struct HeuristicsInfo : Built {
  Graph graph;
};
struct EngineInfo : Built {
  Graph graph;
  int64_t index = 0;
};
struct EngineConfigInfo : Built {
  std::shared_ptr<const EngineInfo> engine;
};
struct PlanInfo : Built {
  Graph graph;
  Handle* handle = nullptr;
  int64_t workspace_bytes = 0;
};
struct PackInfo : Built {
  std::map<int64_t, void*> pointers;
  void* workspace = nullptr;
};

// The workspace each plan asks for: not needed by the host, but written at execution so that a
// workspace outside device memory faults as it would on the device.
constexpr int64_t kPlanWorkspaceBytes = 1024;

// ---- Descriptors ------------------------------------------------------------------------------

struct Value {
  cudnnBackendAttributeType_t type{};
  int64_t count = 0;
  std::vector<unsigned char> bytes;
  std::vector<std::shared_ptr<const Built>> refs;  // BACKEND_DESCRIPTOR values, frozen
};

struct Descriptor {
  cudnnBackendDescriptorType_t type{};
  std::map<int, Value> values;
  std::shared_ptr<const Built> built;  // non-null once finalised
};

std::mutex live_mutex;
std::set<const void*> live;  // our descriptors, to tell them from foreign pointers

Descriptor* as_descriptor(const void* p) {
  std::lock_guard lock(live_mutex);
  return live.count(p) ? static_cast<Descriptor*>(const_cast<void*>(p)) : nullptr;
}

size_t element_bytes(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return 8;
    case CUDNN_TYPE_BOOLEAN:
    case CUDNN_TYPE_CHAR:
      return 1;
    case CUDNN_TYPE_FRACTION:
      return sizeof(cudnnFraction_t);
    default:
      return 4;  // the enumerations, FLOAT, INT32
  }
}

constexpr auto kNoDescriptor = cudnnBackendDescriptorType_t(-1);

// The attribute type each (descriptor, attribute) of the subset takes, and for descriptor values
// the descriptor type they must be. nullopt: not an attribute of that descriptor here.
struct Spec {
  cudnnBackendAttributeType_t type;
  cudnnBackendDescriptorType_t refers = kNoDescriptor;
};

std::optional<Spec> spec_of(cudnnBackendDescriptorType_t d, cudnnBackendAttributeName_t a) {
  const auto tensor = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
  switch (d) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      switch (a) {
        case CUDNN_ATTR_TENSOR_DATA_TYPE:
          return Spec{CUDNN_TYPE_DATA_TYPE};
        case CUDNN_ATTR_TENSOR_DIMENSIONS:
        case CUDNN_ATTR_TENSOR_STRIDES:
        case CUDNN_ATTR_TENSOR_UNIQUE_ID:
        case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
          return Spec{CUDNN_TYPE_INT64};
        case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
        case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
          return Spec{CUDNN_TYPE_BOOLEAN};
        default:
          return std::nullopt;
      }
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      switch (a) {
        case CUDNN_ATTR_POINTWISE_MODE:
          return Spec{CUDNN_TYPE_POINTWISE_MODE};
        case CUDNN_ATTR_POINTWISE_MATH_PREC:
          return Spec{CUDNN_TYPE_DATA_TYPE};
        case CUDNN_ATTR_POINTWISE_AXIS:
          return Spec{CUDNN_TYPE_INT64};
        default:
          return std::nullopt;
      }
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      if (a == CUDNN_ATTR_MATMUL_COMP_TYPE) return Spec{CUDNN_TYPE_DATA_TYPE};
      return std::nullopt;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      if (a == CUDNN_ATTR_REDUCTION_OPERATOR) return Spec{CUDNN_TYPE_REDUCTION_OPERATOR_TYPE};
      if (a == CUDNN_ATTR_REDUCTION_COMP_TYPE) return Spec{CUDNN_TYPE_DATA_TYPE};
      return std::nullopt;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      switch (a) {
        case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR};
        case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
        case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
        case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
        case CUDNN_ATTR_OPERATION_POINTWISE_TDESC:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, tensor};
        case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1:
        case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2:
          return Spec{CUDNN_TYPE_FLOAT};
        default:
          return std::nullopt;
      }
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      switch (a) {
        case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
        case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
        case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, tensor};
        case CUDNN_ATTR_OPERATION_MATMUL_DESC:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_MATMUL_DESCRIPTOR};
        default:
          return std::nullopt;
      }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      switch (a) {
        case CUDNN_ATTR_OPERATION_REDUCTION_XDESC:
        case CUDNN_ATTR_OPERATION_REDUCTION_YDESC:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, tensor};
        case CUDNN_ATTR_OPERATION_REDUCTION_DESC:
          return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_REDUCTION_DESCRIPTOR};
        default:
          return std::nullopt;
      }
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
      if (a == CUDNN_ATTR_OPERATION_RESHAPE_XDESC || a == CUDNN_ATTR_OPERATION_RESHAPE_YDESC)
        return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, tensor};
      return std::nullopt;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (a == CUDNN_ATTR_OPERATIONGRAPH_OPS) return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR};
      if (a == CUDNN_ATTR_OPERATIONGRAPH_HANDLE) return Spec{CUDNN_TYPE_HANDLE};
      return std::nullopt;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (a == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)
        return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
      if (a == CUDNN_ATTR_ENGINEHEUR_MODE) return Spec{CUDNN_TYPE_HEUR_MODE};
      if (a == CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET) return Spec{CUDNN_TYPE_INT32};
      return std::nullopt;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      if (a == CUDNN_ATTR_ENGINE_OPERATION_GRAPH)
        return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
      if (a == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) return Spec{CUDNN_TYPE_INT64};
      return std::nullopt;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      if (a == CUDNN_ATTR_ENGINECFG_ENGINE)
        return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_ENGINE_DESCRIPTOR};
      return std::nullopt;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      if (a == CUDNN_ATTR_EXECUTION_PLAN_HANDLE) return Spec{CUDNN_TYPE_HANDLE};
      if (a == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
        return Spec{CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR};
      return std::nullopt;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (a == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS) return Spec{CUDNN_TYPE_INT64};
      if (a == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS || a == CUDNN_ATTR_VARIANT_PACK_WORKSPACE)
        return Spec{CUDNN_TYPE_VOID_PTR};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool supported_descriptor(cudnnBackendDescriptorType_t d) {
  switch (d) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      return true;
    default:
      return false;
  }
}

bool is_operation(cudnnBackendDescriptorType_t d) {
  return d == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ||
         d == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
         d == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR ||
         d == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR;
}

// Typed reads of a stored attribute (the caller checked presence through `has`).
bool has(const Descriptor& d, cudnnBackendAttributeName_t a) {
  return d.values.count(a) != 0;
}
template <class T>
std::vector<T> values_of(const Descriptor& d, cudnnBackendAttributeName_t a) {
  const Value& v = d.values.at(a);
  std::vector<T> out(size_t(v.count));
  std::memcpy(out.data(), v.bytes.data(), out.size() * sizeof(T));
  return out;
}
template <class T>
T value_of(const Descriptor& d, cudnnBackendAttributeName_t a) {
  T value;
  std::memcpy(&value, d.values.at(a).bytes.data(), sizeof(T));
  return value;
}
template <class T>
std::shared_ptr<const T> ref_of(const Descriptor& d, cudnnBackendAttributeName_t a) {
  const Value& v = d.values.at(a);
  return v.refs.empty() ? nullptr : std::dynamic_pointer_cast<const T>(v.refs[0]);
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string tensor_text(const TensorInfo& t) {
  return "tensor uid " + std::to_string(t.uid) + " " + dims_text(t.dims);
}

// ---- Finalize ---------------------------------------------------------------------------------

#define REQUIRE_ATTRIBUTE(d, name)      \
  if (!has(d, name))                    \
  return refuse(CUDNN_STATUS_BAD_PARAM, \
                std::string("finalize: required attribute " #name " not set"))

cudnnStatus_t finalize_tensor(Descriptor& d) {
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_TENSOR_DATA_TYPE);
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_TENSOR_STRIDES);
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_TENSOR_UNIQUE_ID);
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
  auto t = std::make_shared<TensorInfo>();
  t->type = value_of<cudnnDataType_t>(d, CUDNN_ATTR_TENSOR_DATA_TYPE);
  t->dims = values_of<int64_t>(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  t->strides = values_of<int64_t>(d, CUDNN_ATTR_TENSOR_STRIDES);
  t->uid = value_of<int64_t>(d, CUDNN_ATTR_TENSOR_UNIQUE_ID);
  t->alignment = value_of<int64_t>(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
  if (has(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL))
    t->is_virtual = value_of<bool>(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  if (has(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE))
    t->by_value = value_of<bool>(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
  if (t->dims.size() != t->strides.size())
    return refuse(CUDNN_STATUS_BAD_PARAM, "tensor: _nbDims != _nbStrides");
  if (t->dims.empty() || t->dims.size() > CUDNN_DIM_MAX)
    return refuse(CUDNN_STATUS_BAD_PARAM, "tensor: 1 to 8 dimensions");
  for (size_t i = 0; i < t->dims.size(); ++i)
    if (t->dims[i] <= 0 || t->strides[i] < 0)
      return refuse(CUDNN_STATUS_BAD_PARAM, "tensor: dims must be positive, strides not negative");
  const size_t bytes = data_type_bytes(t->type);
  if (bytes == 0) return refuse(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor: data type");
  if (t->alignment <= 0 || t->alignment % int64_t(bytes) != 0)
    return refuse(CUDNN_STATUS_BAD_PARAM,
                  "(_ptrAlignment <= 0) || _ptrAlignment % sizeofCudnnType(_dataType) != 0");
  if (t->is_virtual && t->by_value)
    return refuse(CUDNN_STATUS_BAD_PARAM, "tensor: virtual and by value");
  d.built = t;
  return CUDNN_STATUS_SUCCESS;
}

// `x` feeds an output `y` of the same rank, each extent equal or a divisor of y's.
bool broadcasts_to(const TensorInfo& x, const TensorInfo& y) {
  if (x.dims.size() != y.dims.size()) return false;
  for (size_t i = 0; i < x.dims.size(); ++i)
    if (y.dims[i] % x.dims[i] != 0) return false;
  return true;
}

int arity(cudnnPointwiseMode_t mode) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_CMP_EQ:
    case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT:
    case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT:
    case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
      return 2;
    case CUDNN_POINTWISE_BINARY_SELECT:
      return 3;
    case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_CEIL:
    case CUDNN_POINTWISE_COS:
    case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_FLOOR:
    case CUDNN_POINTWISE_LOG:
    case CUDNN_POINTWISE_NEG:
    case CUDNN_POINTWISE_RSQRT:
    case CUDNN_POINTWISE_SIN:
    case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_TAN:
    case CUDNN_POINTWISE_ERF:
    case CUDNN_POINTWISE_IDENTITY:
    case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_RELU_FWD:
    case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_SIGMOID_FWD:
    case CUDNN_POINTWISE_LOGICAL_NOT:
    case CUDNN_POINTWISE_GEN_INDEX:
      return 1;
    default:
      return 0;  // outside the interpreted subset
  }
}

cudnnStatus_t finalize_operation(Descriptor& d) {
  auto op = std::make_shared<OpInfo>();
  op->kind = d.type;
  switch (d.type) {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      op->pointwise = *ref_of<PointwiseInfo>(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
      const int n = arity(op->pointwise.mode);
      if (n == 0)
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "pointwise: mode " +
                                                      std::to_string(op->pointwise.mode) +
                                                      " outside the emulated subset");
      op->inputs.push_back(ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
      if (n >= 2) {
        REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        op->inputs.push_back(ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
      }
      if (n == 3) {
        REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
        op->inputs.push_back(ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC));
      }
      op->output = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      if (has(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1))
        op->alpha1 = value_of<float>(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1);
      if (has(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2))
        op->alpha2 = value_of<float>(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2);
      for (const Tensor& in : op->inputs)
        if (!broadcasts_to(*in, *op->output))
          return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "pointwise: " + tensor_text(*in) +
                                                                   " does not broadcast to " +
                                                                   tensor_text(*op->output));
      if (op->pointwise.mode == CUDNN_POINTWISE_GEN_INDEX &&
          (op->pointwise.axis < 0 || op->pointwise.axis >= int64_t(op->output->dims.size()) ||
           op->inputs[0]->dims != op->output->dims))
        return refuse(CUDNN_STATUS_BAD_PARAM, "pointwise GEN_INDEX: axis " +
                                                  std::to_string(op->pointwise.axis) +
                                                  " or dims of x and y");
      break;
    }
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_MATMUL_DESC);
      const Tensor a = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
      const Tensor b = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
      const Tensor c = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
      op->inputs = {a, b};
      op->output = c;
      const size_t r = c->dims.size();
      bool ok = r >= 2 && a->dims.size() == r && b->dims.size() == r &&
                a->dims[r - 2] == c->dims[r - 2] && b->dims[r - 1] == c->dims[r - 1] &&
                a->dims[r - 1] == b->dims[r - 2];
      // Batch extents: A's and B's divide each other (cuDNN's rule) and C's.
      for (size_t i = 0; ok && i + 2 < r; ++i)
        ok = c->dims[i] % a->dims[i] == 0 && c->dims[i] % b->dims[i] == 0 &&
             (a->dims[i] % b->dims[i] == 0 || b->dims[i] % a->dims[i] == 0);
      if (!ok)
        return refuse(
            CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
            "matmul: " + tensor_text(*a) + " · " + tensor_text(*b) + " → " + tensor_text(*c));
      break;
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC);
      op->inputs = {ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC)};
      op->output = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC);
      op->reduction = *ref_of<ReductionInfo>(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC);
      if (!broadcasts_to(*op->output, *op->inputs[0]))
        return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
                      "reduction: " + tensor_text(*op->inputs[0]) + " does not reduce to " +
                          tensor_text(*op->output));
      break;
    }
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC);
      const Tensor x = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC);
      const Tensor y = ref_of<TensorInfo>(d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC);
      op->inputs = {x};
      op->output = y;
      // y must view exactly the memory x occupies, each element once.
      bool ok = x->count() == y->count() && x->span() == y->span() && x->span() == x->count();
      if (ok) {
        std::vector<char> seen(size_t(x->span()), 0);
        std::vector<int64_t> index(y->dims.size(), 0);
        for (int64_t n = 0; ok && n < y->count(); ++n) {
          int64_t offset = 0;
          for (size_t i = 0; i < index.size(); ++i) offset += index[i] * y->strides[i];
          ok = !seen[size_t(offset)];
          seen[size_t(offset)] = 1;
          for (size_t i = index.size(); i-- > 0;) {
            if (++index[i] < y->dims[i]) break;
            index[i] = 0;
          }
        }
      }
      if (!ok)
        return refuse(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "reshape: " + tensor_text(*y) +
                                                             " does not view the elements of " +
                                                             tensor_text(*x) + " each once");
      break;
    }
    default:
      return refuse(CUDNN_STATUS_BAD_PARAM, "not an operation");
  }
  for (const Tensor& in : op->inputs)
    if (!interpretable(in->type))
      return refuse(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "emulated: " + tensor_text(*in));
  if (!interpretable(op->output->type))
    return refuse(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "emulated: " + tensor_text(*op->output));
  if (op->output->by_value)
    return refuse(CUDNN_STATUS_BAD_PARAM,
                  "an operation writes by-value " + tensor_text(*op->output));
  d.built = op;
  return CUDNN_STATUS_SUCCESS;
}

bool same_tensor(const TensorInfo& a, const TensorInfo& b) {
  return a.type == b.type && a.dims == b.dims && a.strides == b.strides &&
         a.is_virtual == b.is_virtual && a.by_value == b.by_value;
}

cudnnStatus_t finalize_graph(Descriptor& d) {
  REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);  // the real one finalises without a handle
  const Value& ops_value = d.values.at(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  std::vector<Op> given;
  for (const auto& ref : ops_value.refs) {
    Op op = std::dynamic_pointer_cast<const OpInfo>(ref);
    if (!op) return refuse(CUDNN_STATUS_BAD_PARAM, "operation graph: a non-operation in OPS");
    given.push_back(op);
  }
  if (given.empty()) return refuse(CUDNN_STATUS_BAD_PARAM, "operation graph: no operations");
  auto g = std::make_shared<GraphInfo>();
  std::map<int64_t, size_t> writer;
  for (size_t i = 0; i < given.size(); ++i) {
    std::vector<Tensor> all = given[i]->inputs;
    all.push_back(given[i]->output);
    for (const Tensor& t : all) {
      auto [it, inserted] = g->tensors.emplace(t->uid, t);
      if (!inserted && it->second != t && !same_tensor(*it->second, *t))
        return refuse(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                      "operation graph: two different tensors with uid " + std::to_string(t->uid));
    }
    if (!writer.emplace(given[i]->output->uid, i).second)
      return refuse(CUDNN_STATUS_BAD_PARAM,
                    "operation graph: two operations write " + tensor_text(*given[i]->output));
    g->written.insert(given[i]->output->uid);
  }
  for (const auto& [uid, t] : g->tensors)
    if (t->is_virtual && !writer.count(uid))
      return refuse(CUDNN_STATUS_BAD_PARAM,
                    "operation graph: virtual " + tensor_text(*t) + " is read but never written");
  // Order: an operation runs once every input it reads from another operation is written.
  std::vector<bool> done(given.size(), false);
  for (size_t placed = 0; placed < given.size();) {
    bool progress = false;
    for (size_t i = 0; i < given.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (const Tensor& in : given[i]->inputs) {
        auto w = writer.find(in->uid);
        if (w != writer.end() && !done[w->second]) ready = false;
      }
      if (!ready) continue;
      done[i] = true;
      g->ops.push_back(given[i]);
      ++placed;
      progress = true;
    }
    if (!progress) return refuse(CUDNN_STATUS_BAD_PARAM, "operation graph: a cycle");
  }
  d.built = g;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(Descriptor& d) {
  switch (d.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      return finalize_tensor(d);
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_POINTWISE_MODE);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_POINTWISE_MATH_PREC);
      auto p = std::make_shared<PointwiseInfo>();
      p->mode = value_of<cudnnPointwiseMode_t>(d, CUDNN_ATTR_POINTWISE_MODE);
      p->math = value_of<cudnnDataType_t>(d, CUDNN_ATTR_POINTWISE_MATH_PREC);
      if (has(d, CUDNN_ATTR_POINTWISE_AXIS))
        p->axis = value_of<int64_t>(d, CUDNN_ATTR_POINTWISE_AXIS);
      d.built = p;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_MATMUL_COMP_TYPE);
      auto m = std::make_shared<MatmulInfo>();
      m->compute = value_of<cudnnDataType_t>(d, CUDNN_ATTR_MATMUL_COMP_TYPE);
      d.built = m;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_REDUCTION_OPERATOR);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_REDUCTION_COMP_TYPE);
      auto r = std::make_shared<ReductionInfo>();
      r->op = value_of<cudnnReduceTensorOp_t>(d, CUDNN_ATTR_REDUCTION_OPERATOR);
      r->compute = value_of<cudnnDataType_t>(d, CUDNN_ATTR_REDUCTION_COMP_TYPE);
      if (r->op == CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS)
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "reduction: MUL_NO_ZEROS not emulated");
      d.built = r;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
      return finalize_operation(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      return finalize_graph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_ENGINEHEUR_MODE);
      auto h = std::make_shared<HeuristicsInfo>();
      h->graph = ref_of<GraphInfo>(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      d.built = h;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
      auto e = std::make_shared<EngineInfo>();
      e->graph = ref_of<GraphInfo>(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
      e->index = value_of<int64_t>(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
      if (e->index != 0)
        return refuse(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "engine: the emulation has engine 0");
      d.built = e;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_ENGINECFG_ENGINE);
      auto c = std::make_shared<EngineConfigInfo>();
      c->engine = ref_of<EngineInfo>(d, CUDNN_ATTR_ENGINECFG_ENGINE);
      d.built = c;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
      auto p = std::make_shared<PlanInfo>();
      p->handle =
          reinterpret_cast<Handle*>(value_of<cudnnHandle_t>(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE));
      if (!p->handle)
        return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "execution plan: null handle");
      p->graph =
          ref_of<EngineConfigInfo>(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->engine->graph;
      p->workspace_bytes = kPlanWorkspaceBytes;
      d.built = p;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
      REQUIRE_ATTRIBUTE(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
      const auto uids = values_of<int64_t>(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
      const auto pointers = values_of<void*>(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
      if (uids.size() != pointers.size())
        return refuse(CUDNN_STATUS_BAD_PARAM, "variant pack: " + std::to_string(uids.size()) +
                                                  " uids but " + std::to_string(pointers.size()) +
                                                  " pointers");
      auto p = std::make_shared<PackInfo>();
      for (size_t i = 0; i < uids.size(); ++i)
        if (!p->pointers.emplace(uids[i], pointers[i]).second)
          return refuse(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                        "variant pack: uid " + std::to_string(uids[i]) + " twice");
      if (has(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE))
        p->workspace = value_of<void*>(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
      d.built = p;
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return refuse(CUDNN_STATUS_NOT_SUPPORTED, "descriptor type outside the emulated subset");
  }
}

// ---- Shadow validation by the real cuDNN ------------------------------------------------------
// The real library builds and finalises tensors, operations and operation graphs without a
// device. When it can be loaded (libcudnn_graph.so.9 on the loader's path;
// DEPTHBENCH_CUDNN_SHADOW=0 turns this off), every such descriptor the emulation finalises is
// replayed into a twin there, and a refusal of the real library is this library's refusal, with its
// message. RTLD_DEEPBIND: the real library's calls to its own entry points must not land in these
// emulated ones.

struct ShadowLibrary {
  decltype(&::cudnnGetVersion) version;
  decltype(&::cudnnGetLastErrorString) last_error_string;
  decltype(&::cudnnBackendCreateDescriptor) create;
  decltype(&::cudnnBackendDestroyDescriptor) destroy;
  decltype(&::cudnnBackendSetAttribute) set;
  decltype(&::cudnnBackendFinalize) finalize;
  std::string description;
};

const ShadowLibrary* shadow_library() {
  static const ShadowLibrary* library = []() -> const ShadowLibrary* {
    if (const char* off = std::getenv("DEPTHBENCH_CUDNN_SHADOW"); off && std::string(off) == "0")
      return nullptr;
    void* handle = nullptr;
    for (const char* name : {"libcudnn_graph.so.9", "libcudnn.so.9"})
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND))) break;
    if (!handle) return nullptr;
    auto* lib = new ShadowLibrary{};
    auto load = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(handle, name));
      return f != nullptr;
    };
    const bool ok = load(lib->version, "cudnnGetVersion") &&
                    load(lib->last_error_string, "cudnnGetLastErrorString") &&
                    load(lib->create, "cudnnBackendCreateDescriptor") &&
                    load(lib->destroy, "cudnnBackendDestroyDescriptor") &&
                    load(lib->set, "cudnnBackendSetAttribute") &&
                    load(lib->finalize, "cudnnBackendFinalize") && lib->version() / 10000 == 9;
    if (!ok) {
      delete lib;
      return nullptr;
    }
    char origin[4096] = "";
    dlinfo(handle, RTLD_DI_ORIGIN, origin);
    const size_t v = lib->version();
    lib->description = "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
                       "." + std::to_string(v % 100) + " (" + origin + ")";
    return lib;
  }();
  return library;
}

bool shadowed(cudnnBackendDescriptorType_t type) {
  return type == CUDNN_BACKEND_TENSOR_DESCRIPTOR || type == CUDNN_BACKEND_POINTWISE_DESCRIPTOR ||
         type == CUDNN_BACKEND_MATMUL_DESCRIPTOR || type == CUDNN_BACKEND_REDUCTION_DESCRIPTOR ||
         is_operation(type) || type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR;
}

// After the emulation accepted `d` (d.built set): the real library's verdict on the same calls.
cudnnStatus_t finalize_shadow(Descriptor& d) {
  const ShadowLibrary* lib = shadow_library();
  if (!lib || !shadowed(d.type)) return CUDNN_STATUS_SUCCESS;
  auto real_refusal = [&](cudnnStatus_t status, const std::string& step) {
    char message[512] = "";
    lib->last_error_string(message, sizeof message);
    d.built = nullptr;
    return refuse(status, "the real " + lib->description + " refuses " + step + ": " + message);
  };
  cudnnBackendDescriptor_t raw = nullptr;
  if (lib->create(d.type, &raw) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_SUCCESS;
  std::shared_ptr<void> twin(raw, [lib](void* p) { lib->destroy(p); });
  std::vector<std::shared_ptr<const Built>> references;
  for (const auto& [name, value] : d.values) {
    if (value.type == CUDNN_TYPE_HANDLE) continue;  // ours is no real handle
    const std::string step = "attribute " + std::to_string(name);
    cudnnStatus_t status;
    if (value.type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      std::vector<void*> twins;
      for (const auto& ref : value.refs) {
        if (!ref->shadow) return CUDNN_STATUS_SUCCESS;  // built before the shadow: no verdict
        twins.push_back(ref->shadow.get());
        references.push_back(ref);
      }
      status = lib->set(raw, cudnnBackendAttributeName_t(name), value.type, int64_t(twins.size()),
                        twins.data());
    } else {
      status = lib->set(raw, cudnnBackendAttributeName_t(name), value.type, value.count,
                        value.bytes.data());
    }
    if (status != CUDNN_STATUS_SUCCESS) return real_refusal(status, step);
  }
  if (cudnnStatus_t status = lib->finalize(raw); status != CUDNN_STATUS_SUCCESS)
    return real_refusal(status, "to finalize");
  d.built->shadow = std::move(twin);
  d.built->references = std::move(references);
  return CUDNN_STATUS_SUCCESS;
}

const char* status_name(cudnnStatus_t s) {
  switch (s) {
#define NAME(x) \
  case x:       \
    return #x;
    NAME(CUDNN_STATUS_SUCCESS)
    NAME(CUDNN_STATUS_NOT_INITIALIZED)
    NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_DEPRECATED)
    NAME(CUDNN_STATUS_LICENSE_ERROR)
    NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    NAME(CUDNN_STATUS_BAD_PARAM)
    NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    NAME(CUDNN_STATUS_INTERNAL_ERROR)
    NAME(CUDNN_STATUS_EXECUTION_FAILED)
#undef NAME
    default:
      return "CUDNN_STATUS_UNKNOWN";
  }
}

}  // namespace

const char* cudnn_shadow_library() {
  const ShadowLibrary* lib = shadow_library();
  return lib ? lib->description.c_str() : nullptr;
}

}  // namespace db::emulation

using namespace db::emulation;

extern "C" {

size_t cudnnGetVersion(void) {
  return CUDNN_VERSION;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  return status_name(status);
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (!message || max_size == 0) return;
  std::snprintf(message, max_size, "%s", last_error.c_str());
  last_error.clear();
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: null");
  *handle = reinterpret_cast<cudnnHandle_t>(new Handle);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!handle) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnDestroy: null");
  delete reinterpret_cast<Handle*>(handle);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetStream: null");
  reinterpret_cast<Handle*>(handle)->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* descriptor) {
  if (!descriptor) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "create: null");
  if (!supported_descriptor(type))
    return refuse(CUDNN_STATUS_NOT_SUPPORTED,
                  "descriptor type " + std::to_string(type) + " outside the emulated subset");
  auto* d = new Descriptor;
  d->type = type;
  std::lock_guard lock(live_mutex);
  live.insert(d);
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  Descriptor* d = as_descriptor(descriptor);
  if (!d) return refuse(CUDNN_STATUS_BAD_PARAM, "destroy: not a descriptor");
  {
    std::lock_guard lock(live_mutex);
    live.erase(d);
  }
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void* elements) {
  Descriptor* d = as_descriptor(descriptor);
  if (!d) return refuse(CUDNN_STATUS_BAD_PARAM, "set: not a descriptor");
  if (d->built) return refuse(CUDNN_STATUS_BAD_PARAM, "set: descriptor already finalized");
  if (!elements || count <= 0)
    return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "set: no elements");
  const std::optional<Spec> spec = spec_of(d->type, name);
  if (!spec)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "set: attribute " + std::to_string(name) +
                                                  " of descriptor type " + std::to_string(d->type) +
                                                  " outside the emulated subset");
  Value v;
  v.type = type;
  v.count = count;
  if (type != spec->type) {
    // α of a pointwise operation may also be given in double.
    if (!(spec->type == CUDNN_TYPE_FLOAT && type == CUDNN_TYPE_DOUBLE && count == 1))
      return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                    "set: attribute " + std::to_string(name) + " takes type " +
                        std::to_string(spec->type) + ", given " + std::to_string(type));
    const float f = float(*static_cast<const double*>(elements));
    v.type = CUDNN_TYPE_FLOAT;
    v.bytes.resize(4);
    std::memcpy(v.bytes.data(), &f, 4);
    d->values[name] = std::move(v);
    return CUDNN_STATUS_SUCCESS;
  }
  const size_t bytes = element_bytes(type) * size_t(count);
  v.bytes.assign(static_cast<const unsigned char*>(elements),
                 static_cast<const unsigned char*>(elements) + bytes);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    const auto* refs = static_cast<const cudnnBackendDescriptor_t*>(elements);
    for (int64_t i = 0; i < count; ++i) {
      const Descriptor* r = as_descriptor(refs[i]);
      if (!r) return refuse(CUDNN_STATUS_BAD_PARAM, "set: value is not a descriptor");
      if (spec->refers != kNoDescriptor ? r->type != spec->refers : !is_operation(r->type))
        return refuse(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                      "set: attribute " + std::to_string(name) + " given descriptor type " +
                          std::to_string(r->type));
      if (!r->built)
        return refuse(
            CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
            "set: attribute " + std::to_string(name) + " given a descriptor not finalized");
      v.refs.push_back(r->built);
    }
  }
  d->values[name] = std::move(v);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  Descriptor* d = as_descriptor(descriptor);
  if (!d) return refuse(CUDNN_STATUS_BAD_PARAM, "finalize: not a descriptor");
  if (d->built) return refuse(CUDNN_STATUS_BAD_PARAM, "finalize: already finalized");
  if (cudnnStatus_t status = finalize(*d); status != CUDNN_STATUS_SUCCESS) return status;
  return finalize_shadow(*d);
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t* count, void* elements) {
  Descriptor* d = as_descriptor(descriptor);
  if (!d) return refuse(CUDNN_STATUS_BAD_PARAM, "get: not a descriptor");
  if (!count) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: null count");
  if (requested < 0) return refuse(CUDNN_STATUS_BAD_PARAM, "get: negative count");
  if (requested > 0 && !elements)
    return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: null elements");
  // Results the library computes: engine configurations, engines, notes, workspace sizes.
  auto fill_descriptors = [&](cudnnBackendDescriptorType_t want,
                              const std::vector<std::shared_ptr<const Built>>& results) {
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
      return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "get: descriptor results");
    *count = int64_t(results.size());
    auto* out = static_cast<cudnnBackendDescriptor_t*>(elements);
    for (int64_t i = 0; i < std::min<int64_t>(requested, *count); ++i) {
      Descriptor* target = as_descriptor(out[i]);
      if (!target || target->type != want)
        return refuse(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                      "get: element " + std::to_string(i) + " of the wrong type");
      target->values.clear();
      target->built = results[size_t(i)];
    }
    return CUDNN_STATUS_SUCCESS;
  };
  auto fill_int64 = [&](int64_t value) {
    if (type != CUDNN_TYPE_INT64)
      return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "get: an INT64 attribute");
    *count = 1;
    if (requested >= 1) *static_cast<int64_t*>(elements) = value;
    return CUDNN_STATUS_SUCCESS;
  };
  const bool computed =
      (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) ||
      (d->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
       (name == CUDNN_ATTR_ENGINECFG_ENGINE || name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE)) ||
      (d->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR &&
       (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE || name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE)) ||
      (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
       name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) ||
      (d->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR &&
       name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT);
  if (computed) {
    if (!d->built) return refuse(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "get: not finalized");
    switch (name) {
      case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
        auto engine = std::make_shared<EngineInfo>();
        engine->graph = std::static_pointer_cast<const HeuristicsInfo>(d->built)->graph;
        auto config = std::make_shared<EngineConfigInfo>();
        config->engine = engine;
        return fill_descriptors(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, {config});
      }
      case CUDNN_ATTR_ENGINECFG_ENGINE:
        return fill_descriptors(
            CUDNN_BACKEND_ENGINE_DESCRIPTOR,
            {std::static_pointer_cast<const EngineConfigInfo>(d->built)->engine});
      case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
      case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
        return fill_int64(kPlanWorkspaceBytes);
      case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
        return fill_int64(1);
      case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
        if (type != CUDNN_TYPE_NUMERICAL_NOTE)
          return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "get: numerical notes");
        *count = 1;  // deterministic, on tensor cores
        if (requested >= 1)
          *static_cast<cudnnBackendNumericalNote_t*>(elements) = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        return CUDNN_STATUS_SUCCESS;
      }
      default:  // behaviour notes: none
        *count = 0;
        return CUDNN_STATUS_SUCCESS;
    }
  }
  auto it = d->values.find(name);
  if (it == d->values.end())
    return refuse(CUDNN_STATUS_BAD_PARAM, "get: attribute " + std::to_string(name) + " not set");
  const Value& v = it->second;
  if (type != v.type) return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "get: attribute type");
  *count = v.count;
  const int64_t n = std::min(requested, v.count);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    auto* out = static_cast<cudnnBackendDescriptor_t*>(elements);
    for (int64_t i = 0; i < n; ++i) {
      Descriptor* target = as_descriptor(out[i]);
      if (!target) return refuse(CUDNN_STATUS_BAD_PARAM, "get: element is not a descriptor");
      target->values.clear();
      target->built = v.refs[size_t(i)];
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (n > 0) std::memcpy(elements, v.bytes.data(), size_t(n) * element_bytes(type));
  return CUDNN_STATUS_SUCCESS;
}

// Checks what cuDNN checks at the call (every non-virtual tensor bound to a pointer aligned as
// its descriptor promises, no uid the graph does not have, the workspace), copies the by-value
// scalars, and enqueues the interpretation on the handle's stream.
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan_descriptor,
                                  cudnnBackendDescriptor_t pack_descriptor) {
  if (!handle) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "execute: null handle");
  const Descriptor* plan_d = as_descriptor(plan_descriptor);
  const Descriptor* pack_d = as_descriptor(pack_descriptor);
  if (!plan_d || plan_d->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !pack_d ||
      pack_d->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return refuse(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, "execute: plan and variant pack");
  if (!plan_d->built || !pack_d->built)
    return refuse(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "execute: plan or pack not finalized");
  const auto plan = std::static_pointer_cast<const PlanInfo>(plan_d->built);
  const auto pack = std::static_pointer_cast<const PackInfo>(pack_d->built);
  const GraphInfo& g = *plan->graph;
  std::map<int64_t, float> scalars;
  for (const auto& [uid, pointer] : pack->pointers)
    if (!g.tensors.count(uid) || g.tensors.at(uid)->is_virtual)
      return refuse(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack binds uid " +
                                                std::to_string(uid) +
                                                ", which is no non-virtual tensor of the graph");
  for (const auto& [uid, t] : g.tensors) {
    if (t->is_virtual) continue;
    auto p = pack->pointers.find(uid);
    if (p == pack->pointers.end() || !p->second)
      return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                    "execute: no pointer for " + tensor_text(*t));
    if (t->by_value) {
      scalars[uid] = load_element(t->type, static_cast<const char*>(p->second));
      continue;
    }
    if (reinterpret_cast<uintptr_t>(p->second) % uintptr_t(t->alignment) != 0)
      return refuse(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                    "execute: the pointer of " + tensor_text(*t) + " is not aligned to " +
                        std::to_string(t->alignment) + " bytes");
  }
  if (plan->workspace_bytes > 0 && !pack->workspace)
    return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "execute: the plan needs a workspace");
  Handle* h = reinterpret_cast<Handle*>(handle);
  const std::map<int64_t, void*> pointers = pack->pointers;
  void* workspace = pack->workspace;
  const int64_t workspace_bytes = plan->workspace_bytes;
  const auto graph = plan->graph;
  const cudaError_t queued = enqueue(h->stream, "cudnnBackendExecute", [=] {
    interpret(*graph, pointers, scalars, workspace, workspace_bytes);
  });
  return queued == cudaSuccess ? CUDNN_STATUS_SUCCESS
                               : refuse(CUDNN_STATUS_EXECUTION_FAILED_CUDART,
                                        std::string("execute: ") + cudaGetErrorString(queued));
}

}  // extern "C"
