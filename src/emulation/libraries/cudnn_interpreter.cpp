// The host interpreter of a cuDNN operation graph (emulation only): every tensor is a dense fp32
// array in logical (row-major) order, rounded to the tensor's type when written (bf16 to nearest
// even, booleans to 0/1); device tensors are read and written through their strides. The rules:
//   - broadcasting: an operand's extent equals the output's or divides it, the output index i
//     reading the operand at i / (output extent / operand extent) (1 is a broadcast; a divisor is
//     a grouped head, query head h reading kv head h / (H / H_kv) as cuDNN's attention does);
//   - matmul C[..., m, n] = Σ_k A[..., m, k]·B[..., k, n], batch dimensions broadcast as above;
//   - reduction y = reduce(x) over the x elements that map to each y element by the same rule;
//   - reshape: the same memory seen through y's dims and strides (swapped strides transpose);
//   - pointwise y = mode(α1·x, α2·b[, t]) in fp32 (GEN_INDEX: the index along `axis`,
//     BINARY_SELECT: t ? x : b).
// Sums (matmul, reduction) accumulate in double and round once to the output type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

#include "emulation/libraries/cudnn_graph.hpp"
#include "emulation/libraries/host_values.hpp"

namespace db::emulation::cudnn {

size_t data_type_bytes(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
      return 4;
    case CUDNN_DATA_BFLOAT16:
    case CUDNN_DATA_HALF:
      return 2;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
      return 1;
    default:
      return 0;
  }
}

bool interpretable(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_BFLOAT16 || t == CUDNN_DATA_INT32 ||
         t == CUDNN_DATA_BOOLEAN;
}

float load_element(cudnnDataType_t type, const char* p) {
  switch (type) {
    case CUDNN_DATA_FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case CUDNN_DATA_BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_bits_to_float(v);
    }
    case CUDNN_DATA_INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return float(v);
    }
    default:
      return *p ? 1.f : 0.f;  // BOOLEAN, one byte
  }
}

namespace {

using Dense = std::vector<float>;  // a tensor's values in logical row-major order

float quantize(cudnnDataType_t type, float v) {
  switch (type) {
    case CUDNN_DATA_BFLOAT16:
      return round_to_bf16(v);
    case CUDNN_DATA_INT32:
      return float(int32_t(v));
    case CUDNN_DATA_BOOLEAN:
      return v != 0.f ? 1.f : 0.f;
    default:
      return v;
  }
}

// Calls f(flat index, multi-index) for every element of `dims` in row-major order.
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    f(n, index);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++index[i] < dims[i]) break;
      index[i] = 0;
    }
  }
}

// Where the elements of an iteration space land in a tensor, one dimension at a time: the
// position of multi-index i is Σ_d table[d][i[d]].
using Tables = std::vector<std::vector<int64_t>>;

// A dense operand of extents `dims` read over the output extents `out_dims` (the broadcasting
// rule: output index i reads i / (out extent / operand extent)).
Tables dense_tables(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims) {
  Tables t(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    const int64_t ratio = out_dims[d] / dims[d];
    t[d].resize(size_t(out_dims[d]));
    for (int64_t i = 0; i < out_dims[d]; ++i) t[d][size_t(i)] = (i / ratio) * stride;
    stride *= dims[d];
  }
  return t;
}

// A tensor's memory offsets (elements) through its strides.
Tables strided_tables(const TensorInfo& x) {
  Tables t(x.dims.size());
  for (size_t d = 0; d < x.dims.size(); ++d) {
    t[d].resize(size_t(x.dims[d]));
    for (int64_t i = 0; i < x.dims[d]; ++i) t[d][size_t(i)] = i * x.strides[d];
  }
  return t;
}

// Calls f(flat index of the row's first element, index of the outer dimensions) for every row
// (the last dimension) of `dims` in row-major order.
template <class F>
void for_each_row(const std::vector<int64_t>& dims, F&& f) {
  const size_t outer = dims.size() - 1;
  int64_t rows = 1;
  for (size_t d = 0; d < outer; ++d) rows *= dims[d];
  std::vector<int64_t> index(outer, 0);
  for (int64_t row = 0; row < rows; ++row) {
    f(row * dims.back(), index);
    for (size_t i = outer; i-- > 0;) {
      if (++index[i] < dims[i]) break;
      index[i] = 0;
    }
  }
}

int64_t row_base(const Tables& t, const std::vector<int64_t>& outer) {
  int64_t base = 0;
  for (size_t d = 0; d < outer.size(); ++d) base += t[d][size_t(outer[d])];
  return base;
}

void store_element(cudnnDataType_t type, char* p, float v) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
      std::memcpy(p, &v, 4);
      break;
    case CUDNN_DATA_BFLOAT16: {
      const uint16_t bits = float_to_bf16_bits(v);
      std::memcpy(p, &bits, 2);
      break;
    }
    case CUDNN_DATA_INT32: {
      const int32_t i = int32_t(v);
      std::memcpy(p, &i, 4);
      break;
    }
    default:
      *p = v != 0.f;
  }
}

Dense load(const TensorInfo& t, const void* data) {
  Dense out(size_t(t.count()));
  const size_t bytes = data_type_bytes(t.type);
  const char* base = static_cast<const char*>(data);
  const Tables offsets = strided_tables(t);
  for_each_row(t.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    const char* row = base + row_base(offsets, outer) * int64_t(bytes);
    const std::vector<int64_t>& last = offsets.back();
    for (size_t j = 0; j < last.size(); ++j)
      out[size_t(n) + j] = load_element(t.type, row + last[j] * int64_t(bytes));
  });
  return out;
}

void store(const TensorInfo& t, void* data, const Dense& values) {
  const size_t bytes = data_type_bytes(t.type);
  char* base = static_cast<char*>(data);
  const Tables offsets = strided_tables(t);
  for_each_row(t.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    char* row = base + row_base(offsets, outer) * int64_t(bytes);
    const std::vector<int64_t>& last = offsets.back();
    for (size_t j = 0; j < last.size(); ++j)
      store_element(t.type, row + last[j] * int64_t(bytes), values[size_t(n) + j]);
  });
}

float pointwise_value(const PointwiseInfo& p, float x, float b, float t) {
  switch (p.mode) {
    case CUDNN_POINTWISE_ADD:
      return x + b;
    case CUDNN_POINTWISE_ADD_SQUARE:
      return x + b * b;
    case CUDNN_POINTWISE_SUB:
      return x - b;
    case CUDNN_POINTWISE_MUL:
      return x * b;
    case CUDNN_POINTWISE_DIV:
      return x / b;
    case CUDNN_POINTWISE_MAX:
      return std::max(x, b);
    case CUDNN_POINTWISE_MIN:
      return std::min(x, b);
    case CUDNN_POINTWISE_MOD:
      return std::fmod(x, b);
    case CUDNN_POINTWISE_POW:
      return std::pow(x, b);
    case CUDNN_POINTWISE_CMP_EQ:
      return x == b;
    case CUDNN_POINTWISE_CMP_NEQ:
      return x != b;
    case CUDNN_POINTWISE_CMP_GT:
      return x > b;
    case CUDNN_POINTWISE_CMP_GE:
      return x >= b;
    case CUDNN_POINTWISE_CMP_LT:
      return x < b;
    case CUDNN_POINTWISE_CMP_LE:
      return x <= b;
    case CUDNN_POINTWISE_LOGICAL_AND:
      return x != 0 && b != 0;
    case CUDNN_POINTWISE_LOGICAL_OR:
      return x != 0 || b != 0;
    case CUDNN_POINTWISE_LOGICAL_NOT:
      return x == 0;
    case CUDNN_POINTWISE_BINARY_SELECT:
      return t != 0 ? x : b;
    case CUDNN_POINTWISE_ABS:
      return std::fabs(x);
    case CUDNN_POINTWISE_CEIL:
      return std::ceil(x);
    case CUDNN_POINTWISE_FLOOR:
      return std::floor(x);
    case CUDNN_POINTWISE_COS:
      return std::cos(x);
    case CUDNN_POINTWISE_SIN:
      return std::sin(x);
    case CUDNN_POINTWISE_TAN:
      return std::tan(x);
    case CUDNN_POINTWISE_EXP:
      return std::exp(x);
    case CUDNN_POINTWISE_LOG:
      return std::log(x);
    case CUDNN_POINTWISE_NEG:
      return -x;
    case CUDNN_POINTWISE_SQRT:
      return std::sqrt(x);
    case CUDNN_POINTWISE_RSQRT:
      return 1.f / std::sqrt(x);
    case CUDNN_POINTWISE_RECIPROCAL:
      return 1.f / x;
    case CUDNN_POINTWISE_ERF:
      return std::erf(x);
    case CUDNN_POINTWISE_IDENTITY:
      return x;
    case CUDNN_POINTWISE_RELU_FWD:
      return std::max(x, 0.f);
    case CUDNN_POINTWISE_TANH_FWD:
      return std::tanh(x);
    case CUDNN_POINTWISE_SIGMOID_FWD:
      return 1.f / (1.f + std::exp(-x));
    default:
      return std::numeric_limits<float>::quiet_NaN();  // refused at finalize
  }
}

bool arithmetic(cudnnPointwiseMode_t mode) {
  return !(mode == CUDNN_POINTWISE_GEN_INDEX || mode == CUDNN_POINTWISE_BINARY_SELECT ||
           (mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_LOGICAL_NOT));
}

void run_pointwise(const OpInfo& op, const std::vector<const Dense*>& in, Dense& out) {
  const TensorInfo& y = *op.output;
  const PointwiseInfo& p = op.pointwise;
  const bool scaled = arithmetic(p.mode);
  const size_t last_dim = y.dims.size() - 1;
  std::vector<Tables> tables;
  for (const Tensor& t : op.inputs) tables.push_back(dense_tables(t->dims, y.dims));
  for_each_row(y.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    int64_t base[3] = {0, 0, 0};
    for (size_t i = 0; i < in.size(); ++i) base[i] = row_base(tables[i], outer);
    for (int64_t j = 0; j < y.dims[last_dim]; ++j) {
      float v[3] = {0.f, 0.f, 0.f};
      for (size_t i = 0; i < in.size(); ++i)
        v[i] = (*in[i])[size_t(base[i] + tables[i][last_dim][size_t(j)])];
      if (scaled) v[0] *= op.alpha1, v[1] *= op.alpha2;
      float r;
      if (p.mode == CUDNN_POINTWISE_GEN_INDEX)
        r = float(size_t(p.axis) == last_dim ? j : outer[size_t(p.axis)]);
      else
        r = pointwise_value(p, v[0], v[1], v[2]);
      out[size_t(n + j)] = quantize(y.type, r);
    }
  });
}

void run_matmul(const OpInfo& op, const Dense& a, const Dense& b, Dense& c) {
  const TensorInfo &ta = *op.inputs[0], &tb = *op.inputs[1], &tc = *op.output;
  const size_t r = tc.dims.size();
  const int64_t M = tc.dims[r - 2], N = tc.dims[r - 1], K = ta.dims[r - 1];
  std::vector<int64_t> batch_dims(tc.dims.begin(), tc.dims.end() - 2);
  auto batch_base = [&](const TensorInfo& t, const std::vector<int64_t>& index) {
    int64_t position = 0;
    for (size_t i = 0; i < index.size(); ++i)
      position = position * t.dims[i] + index[i] / (tc.dims[i] / t.dims[i]);
    return position;
  };
  std::vector<float> b_t(size_t(K * N));  // B of one batch transposed: contiguous dot products
  for_each_index(batch_dims, [&](int64_t n, const std::vector<int64_t>& index) {
    const float* pa = a.data() + batch_base(ta, index) * M * K;
    const float* pb = b.data() + batch_base(tb, index) * K * N;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) b_t[size_t(j * K + k)] = pb[k * N + j];
    float* pc = c.data() + n * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const float* row = pa + i * K;
        const float* col = b_t.data() + j * K;
        // Four partial sums: independent additions (the order is fixed, so results are too).
        double sum[4] = {0, 0, 0, 0};
        int64_t k = 0;
        for (; k + 4 <= K; k += 4)
          for (int u = 0; u < 4; ++u) sum[u] += double(row[k + u]) * col[k + u];
        for (; k < K; ++k) sum[0] += double(row[k]) * col[k];
        pc[i * N + j] = quantize(tc.type, float((sum[0] + sum[1]) + (sum[2] + sum[3])));
      }
  });
}

void run_reduction(const OpInfo& op, const Dense& x, Dense& out) {
  const TensorInfo &tx = *op.inputs[0], &ty = *op.output;
  const cudnnReduceTensorOp_t kind = op.reduction.op;
  std::vector<double> acc(out.size());
  double start = 0;
  if (kind == CUDNN_REDUCE_TENSOR_MAX) start = -std::numeric_limits<double>::infinity();
  if (kind == CUDNN_REDUCE_TENSOR_MIN) start = std::numeric_limits<double>::infinity();
  if (kind == CUDNN_REDUCE_TENSOR_MUL) start = 1;
  std::fill(acc.begin(), acc.end(), start);
  const Tables target = dense_tables(ty.dims, tx.dims);
  const size_t last_dim = tx.dims.size() - 1;
  for_each_row(tx.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    const int64_t base = row_base(target, outer);
    for (int64_t j = 0; j < tx.dims[last_dim]; ++j) {
      double& a = acc[size_t(base + target[last_dim][size_t(j)])];
      const double v = x[size_t(n + j)];
      switch (kind) {
        case CUDNN_REDUCE_TENSOR_MAX:
          a = std::max(a, v);
          break;
        case CUDNN_REDUCE_TENSOR_MIN:
          a = std::min(a, v);
          break;
        case CUDNN_REDUCE_TENSOR_AMAX:
          a = std::max(a, std::fabs(v));
          break;
        case CUDNN_REDUCE_TENSOR_MUL:
          a *= v;
          break;
        case CUDNN_REDUCE_TENSOR_NORM1:
          a += std::fabs(v);
          break;
        case CUDNN_REDUCE_TENSOR_NORM2:
          a += v * v;
          break;
        default:  // ADD, AVG
          a += v;
      }
    }
  });
  const double group = double(tx.count()) / double(ty.count());
  for (size_t i = 0; i < out.size(); ++i) {
    double v = acc[i];
    if (kind == CUDNN_REDUCE_TENSOR_AVG) v /= group;
    if (kind == CUDNN_REDUCE_TENSOR_NORM2) v = std::sqrt(v);
    out[i] = quantize(ty.type, float(v));
  }
}

// y sees x's memory through its own strides: scatter x by its strides, gather y by its own.
void run_reshape(const OpInfo& op, const Dense& x, Dense& out) {
  const TensorInfo &tx = *op.inputs[0], &ty = *op.output;
  std::vector<float> memory(size_t(tx.span()));
  const Tables from = strided_tables(tx), to = strided_tables(ty);
  for_each_row(tx.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    const int64_t base = row_base(from, outer);
    for (size_t j = 0; j < from.back().size(); ++j)
      memory[size_t(base + from.back()[j])] = x[size_t(n) + j];
  });
  for_each_row(ty.dims, [&](int64_t n, const std::vector<int64_t>& outer) {
    const int64_t base = row_base(to, outer);
    for (size_t j = 0; j < to.back().size(); ++j)
      out[size_t(n) + j] = quantize(ty.type, memory[size_t(base + to.back()[j])]);
  });
}

}  // namespace

// One execution: device pointers by uid, by-value scalars already copied.
void interpret(const GraphInfo& g, const std::map<int64_t, void*>& pointers,
               const std::map<int64_t, float>& scalars, void* workspace, int64_t workspace_bytes) {
  const char* call = "cudnnBackendExecute";
  if (workspace_bytes > 0) {
    require_device_range(call, "workspace", workspace, size_t(workspace_bytes));
    std::memset(workspace, 0xcd, size_t(workspace_bytes));
  }
  std::unordered_map<int64_t, Dense> values;
  for (const auto& [uid, t] : g.tensors) {
    if (t->is_virtual) continue;
    const std::string name = "tensor uid " + std::to_string(uid);
    if (t->by_value) {
      values[uid] = Dense(size_t(t->count()), quantize(t->type, scalars.at(uid)));
      continue;
    }
    require_device_range(call, name.c_str(), pointers.at(uid),
                         size_t(t->span()) * data_type_bytes(t->type));
    if (!g.written.count(uid)) values[uid] = load(*t, pointers.at(uid));
  }
  for (const Op& op : g.ops) {
    std::vector<const Dense*> in;
    for (const Tensor& t : op->inputs) in.push_back(&values.at(t->uid));
    Dense out(size_t(op->output->count()));
    switch (op->kind) {
      case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        run_pointwise(*op, in, out);
        break;
      case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        run_matmul(*op, *in[0], *in[1], out);
        break;
      case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        run_reduction(*op, *in[0], out);
        break;
      default:
        run_reshape(*op, *in[0], out);
    }
    if (!op->output->is_virtual) store(*op->output, pointers.at(op->output->uid), out);
    values[op->output->uid] = std::move(out);
  }
}

}  // namespace db::emulation::cudnn
