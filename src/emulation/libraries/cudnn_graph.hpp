// The content of finalised cuDNN descriptors that the graph interpreter needs (internal to
// src/emulation/libraries): tensors, operations and operation graphs, frozen and shared, so a
// finalised graph does not depend on the descriptors it was built from.
#pragma once
#include <cudnn_graph.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace db::emulation::cudnn {

struct Built {
  virtual ~Built() = default;
  // The real cuDNN's twin of this descriptor (shadow validation, below), and what it refers to.
  mutable std::shared_ptr<void> shadow;
  mutable std::vector<std::shared_ptr<const Built>> references;
};

struct TensorInfo : Built {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  int64_t uid = 0, alignment = 0;
  bool is_virtual = false, by_value = false;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int64_t span() const {  // elements from the first to the last one addressed, inclusive
    int64_t last = 0;
    for (size_t i = 0; i < dims.size(); ++i) last += (dims[i] - 1) * strides[i];
    return last + 1;
  }
};
using Tensor = std::shared_ptr<const TensorInfo>;

struct PointwiseInfo : Built {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_IDENTITY;
  cudnnDataType_t math = CUDNN_DATA_FLOAT;
  int64_t axis = -1;
};
struct MatmulInfo : Built {
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};
struct ReductionInfo : Built {
  cudnnReduceTensorOp_t op = CUDNN_REDUCE_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};

struct OpInfo : Built {
  cudnnBackendDescriptorType_t kind{};
  std::vector<Tensor> inputs;  // pointwise: x[, b[, t]]; matmul: a, b; reduction, reshape: x
  Tensor output;
  PointwiseInfo pointwise;
  ReductionInfo reduction;
  float alpha1 = 1.f, alpha2 = 1.f;
};
using Op = std::shared_ptr<const OpInfo>;

struct GraphInfo : Built {
  std::vector<Op> ops;  // in an order where every input is written before it is read
  std::map<int64_t, Tensor> tensors;
  std::set<int64_t> written;  // uids some operation writes
};
using Graph = std::shared_ptr<const GraphInfo>;

size_t data_type_bytes(cudnnDataType_t type);  // 0: a type outside the subset
bool interpretable(cudnnDataType_t type);      // float, bf16, int32, boolean
// One element of `type` at p, as fp32 (bf16 widened exactly, booleans 0/1).
float load_element(cudnnDataType_t type, const char* p);

// Runs the graph on the host (cudnn_interpreter.cpp): the device tensors bound by uid, the
// by-value scalars as copied at the call. A DeviceFault when a device tensor or the workspace
// is not inside one allocation.
void interpret(const GraphInfo& graph, const std::map<int64_t, void*>& pointers,
               const std::map<int64_t, float>& scalars, void* workspace, int64_t workspace_bytes);

}  // namespace db::emulation::cudnn
