#include "ops/cuda/attention_paths.hpp"

#include <cstdio>
#include <string>

#include "ops/cuda/attention_convert.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/flash_attention.hpp"
#include "ops/cuda/moda_attention.hpp"
#include "ops/cuda/moda_depth_merge.hpp"
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

AttentionPath AttentionPaths::path_for(const AttentionShape& s, bool moda) {
  const auto key = [&](bool kind) {
    return std::make_tuple(kind, s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim);
  };
  auto it = chosen_.find(key(moda));
  if (it == chosen_.end()) {
    // One choice (and one note) per shape: a plain attention and MoDA's sequence part of the
    // same shape take the same path.
    const auto other = chosen_.find(key(!moda));
    it = chosen_.emplace(key(moda), other != chosen_.end() ? other->second : choose(s)).first;
  }
  return it->second.path;
}

AttentionPaths::Choice AttentionPaths::choose(const AttentionShape& s) {
  switch (requested_) {
    case AttentionPath::reference:
      return {AttentionPath::reference, ""};
    case AttentionPath::cudnn: {
      const std::string why = cudnn_.prepare(s);
      if (!why.empty()) throw ::db::Error("train.attention = cudnn: " + why);
      return {AttentionPath::cudnn, ""};
    }
    case AttentionPath::flash:
      if (!flash_attention_supports(s))
        throw ::db::Error("train.attention = flash: our flash kernel does not run " + describe(s) +
                          " in this build");
      return {AttentionPath::flash, ""};
    case AttentionPath::automatic:
      break;
  }
  if (precision_ == Precision::fp32) return {AttentionPath::reference, ""};
  const std::string why = cudnn_.prepare(s);
  if (why.empty()) return {AttentionPath::cudnn, ""};
  if (flash_attention_supports(s)) {
    note(why + "; using our flash kernel");
    return {AttentionPath::flash, why};
  }
  const std::string neither = why + "; our flash kernel does not run it either";
  note(neither + ": using the reference kernel");
  return {AttentionPath::reference, neither};
}

std::string AttentionPaths::report() const {
  std::string out;
  for (const auto& [key, choice] : chosen_) {
    const auto& [moda, batch, seq_len, heads, kv_heads, head_dim] = key;
    if (!out.empty()) out += "; ";
    out += (moda ? "moda " : "") + describe({batch, seq_len, heads, kv_heads, head_dim}) + ": " +
           attention_path_name(choice.path);
    if (!choice.fallback.empty()) out += " (" + choice.fallback + ")";
  }
  return out.empty() ? "none" : out;
}

void AttentionPaths::forward(float* o, float* lse, const float* q, const float* k, const float* v,
                             const AttentionShape& s, cudaStream_t stream) {
  run_forward(path_for(s, false), o, lse, q, k, v, s, stream);
}

void AttentionPaths::backward(float* dq, float* dk, float* dv, const float* d_o, const float* o,
                              const float* lse, const float* q, const float* k, const float* v,
                              const AttentionShape& s, cudaStream_t stream) {
  run_backward(path_for(s, false), dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
}

void AttentionPaths::run_forward(AttentionPath path, float* o, float* lse, const float* q,
                                 const float* k, const float* v, const AttentionShape& s,
                                 cudaStream_t stream) {
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

void AttentionPaths::run_backward(AttentionPath path, float* dq, float* dk, float* dv,
                                  const float* d_o, const float* o, const float* lse,
                                  const float* q, const float* k, const float* v,
                                  const AttentionShape& s, cudaStream_t stream) {
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

// MoDA: the sequence part through the shape's path, then the depth entries merged into o and lse
// through the log-sum-exp. The reference path keeps the MoDA kernel (the test oracle).
void AttentionPaths::moda_forward(float* o, float* lse, const float* q, const float* k,
                                  const float* v, const float* depth_k, const float* depth_v,
                                  const ModaShape& s, cudaStream_t stream) {
  const AttentionShape seq{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  const AttentionPath path = path_for(seq, true);
  if (path == AttentionPath::reference)
    return moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s, stream);
  run_forward(path, o, lse, q, k, v, seq, stream);
  moda_depth_merge_forward(o, lse, q, depth_k, depth_v, s, stream);
}

// Given the joint o and lse, the plain attention backward is exactly the sequence part of the
// joint softmax's (its P = exp(S − lse) are the joint probabilities, its D = dO·o the joint
// one); the depth part adds to dq and to the depth gradients.
void AttentionPaths::moda_backward(float* dq, float* dk, float* dv, float* d_depth_k,
                                   float* d_depth_v, const float* d_o, const float* o,
                                   const float* lse, const float* q, const float* k, const float* v,
                                   const float* depth_k, const float* depth_v, const ModaShape& s,
                                   cudaStream_t stream) {
  const AttentionShape seq{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  const AttentionPath path = path_for(seq, true);
  if (path == AttentionPath::reference)
    return moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v, depth_k,
                                   depth_v, s, stream);
  run_backward(path, dq, dk, dv, d_o, o, lse, q, k, v, seq, stream);
  moda_depth_merge_backward(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, stream);
}

}  // namespace db::cuda
