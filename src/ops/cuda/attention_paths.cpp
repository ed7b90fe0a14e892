#include "ops/cuda/attention_paths.hpp"

#include <cstdio>
#include <string>

#include "ops/cuda/attention_convert.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/flash_attention.hpp"
#include "ops/cuda/scratch_buffer.hpp"

namespace db::cuda {
namespace {

std::string describe(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq_len) +
         " H=" + std::to_string(s.heads) + " H_kv=" + std::to_string(s.kv_heads) +
         " hd=" + std::to_string(s.head_dim);
}

void note(const std::string& line) {
  std::printf("attention: %s\n", line.c_str());
  std::fflush(stdout);
}

// bf16 copies of one call's tensors, [rows, width] with the head dim padded to `width`.
struct Bf16Tensors {
  int64_t q_rows, kv_rows;
  int head_dim, width;
  Bf16Tensors(const AttentionShape& s, int padded_width)
      : q_rows(s.batch * s.seq_len * s.heads),
        kv_rows(s.batch * s.seq_len * s.kv_heads),
        head_dim(s.head_dim),
        width(padded_width) {}
  ScratchBuffer<bf16> q_sized(cudaStream_t stream) const {
    return ScratchBuffer<bf16>(size_t(q_rows) * width, stream);
  }
  ScratchBuffer<bf16> kv_sized(cudaStream_t stream) const {
    return ScratchBuffer<bf16>(size_t(kv_rows) * width, stream);
  }
  ScratchBuffer<bf16> copy(const float* x, int64_t rows, cudaStream_t stream) const {
    ScratchBuffer<bf16> out(size_t(rows) * width, stream);
    to_padded_bf16(out.data(), x, rows, head_dim, width, stream);
    return out;
  }
};

}  // namespace

AttentionPath AttentionPaths::path_for(const AttentionShape& s) {
  const auto key = std::make_tuple(s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim);
  auto it = chosen_.find(key);
  if (it == chosen_.end()) it = chosen_.emplace(key, choose(s)).first;
  return it->second;
}

AttentionPath AttentionPaths::choose(const AttentionShape& s) {
  switch (requested_) {
    case AttentionPath::reference:
      return AttentionPath::reference;
    case AttentionPath::cudnn: {
      const std::string why = cudnn_.prepare(s);
      if (!why.empty()) throw ::db::Error("train.attention = cudnn: " + why);
      return AttentionPath::cudnn;
    }
    case AttentionPath::flash:
      if (!flash_attention_supports(s))
        throw ::db::Error("train.attention = flash: our flash kernel does not run " + describe(s) +
                          " in this build");
      return AttentionPath::flash;
    case AttentionPath::automatic:
      break;
  }
  if (precision_ == Precision::fp32) return AttentionPath::reference;
  const std::string why = cudnn_.prepare(s);
  if (why.empty()) return AttentionPath::cudnn;
  if (flash_attention_supports(s)) {
    note(why + "; using our flash kernel");
    return AttentionPath::flash;
  }
  note(why + "; our flash kernel does not run it either: using the reference kernel");
  return AttentionPath::reference;
}

void AttentionPaths::forward(float* o, float* lse, const float* q, const float* k, const float* v,
                             const AttentionShape& s, cudaStream_t stream) {
  const AttentionPath path = path_for(s);
  if (path == AttentionPath::reference) return attention_forward<float>(o, lse, q, k, v, s, stream);
  const bool cudnn = path == AttentionPath::cudnn;
  const Bf16Tensors t(s, cudnn ? CudnnAttention::padded_head_dim(s.head_dim) : s.head_dim);
  const ScratchBuffer<bf16> q16 = t.copy(q, t.q_rows, stream);
  const ScratchBuffer<bf16> k16 = t.copy(k, t.kv_rows, stream);
  const ScratchBuffer<bf16> v16 = t.copy(v, t.kv_rows, stream);
  const ScratchBuffer<bf16> o16 = t.q_sized(stream);
  if (cudnn)
    cudnn_.forward(o16.data(), lse, q16.data(), k16.data(), v16.data(), s, stream);
  else
    flash_attention_forward(o16.data(), lse, q16.data(), k16.data(), v16.data(), s, stream);
  from_padded_bf16(o, o16.data(), t.q_rows, s.head_dim, t.width, stream);
}

void AttentionPaths::backward(float* dq, float* dk, float* dv, const float* d_o, const float* o,
                              const float* lse, const float* q, const float* k, const float* v,
                              const AttentionShape& s, cudaStream_t stream) {
  const AttentionPath path = path_for(s);
  if (path == AttentionPath::reference)
    return attention_backward<float>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
  const bool cudnn = path == AttentionPath::cudnn;
  const Bf16Tensors t(s, cudnn ? CudnnAttention::padded_head_dim(s.head_dim) : s.head_dim);
  const ScratchBuffer<bf16> q16 = t.copy(q, t.q_rows, stream);
  const ScratchBuffer<bf16> k16 = t.copy(k, t.kv_rows, stream);
  const ScratchBuffer<bf16> v16 = t.copy(v, t.kv_rows, stream);
  const ScratchBuffer<bf16> o16 = t.copy(o, t.q_rows, stream);
  const ScratchBuffer<bf16> do16 = t.copy(d_o, t.q_rows, stream);
  const ScratchBuffer<bf16> dq16 = t.q_sized(stream);
  const ScratchBuffer<bf16> dk16 = t.kv_sized(stream);
  const ScratchBuffer<bf16> dv16 = t.kv_sized(stream);
  if (cudnn)
    cudnn_.backward(dq16.data(), dk16.data(), dv16.data(), do16.data(), o16.data(), lse, q16.data(),
                    k16.data(), v16.data(), s, stream);
  else
    flash_attention_backward(dq16.data(), dk16.data(), dv16.data(), do16.data(), o16.data(), lse,
                             q16.data(), k16.data(), v16.data(), s, stream);
  from_padded_bf16(dq, dq16.data(), t.q_rows, s.head_dim, t.width, stream);
  from_padded_bf16(dk, dk16.data(), t.kv_rows, s.head_dim, t.width, stream);
  from_padded_bf16(dv, dv16.data(), t.kv_rows, s.head_dim, t.width, stream);
}

}  // namespace db::cuda
