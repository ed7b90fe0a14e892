#include "ops/cuda/attention_paths.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "ops/cuda/attention_convert.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/elementwise.hpp"
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

// Where one call's tensors meet a fast path: bf16 [rows, width], the head dim padded to `width`
// for cuDNN.
// A wrong fast path on purpose, for the test of train.validate (tests/train/
// path_validation_test.cpp, doc/cuda.md): DEPTHBENCH_TEST_FLASH_OUTPUT_SCALE=1.01 scales every
// output of our flash forward by 1.01. Read once per process; 1 (nothing done) when unset.
float flash_output_scale_for_test() {
  static const float scale = [] {
    const char* value = std::getenv("DEPTHBENCH_TEST_FLASH_OUTPUT_SCALE");
    return value ? std::strtof(value, nullptr) : 1.f;
  }();
  return scale;
}

struct FastLayout {
  int64_t q_rows, kv_rows;
  int head_dim, width;
  bool cudnn;
  FastLayout(const AttentionShape& s, AttentionPath path)
      : q_rows(s.batch * s.seq_len * s.heads),
        kv_rows(s.batch * s.seq_len * s.kv_heads),
        head_dim(s.head_dim),
        width(path == AttentionPath::cudnn ? CudnnAttention::padded_head_dim(s.head_dim)
                                           : s.head_dim),
        cudnn(path == AttentionPath::cudnn) {}
  // Whether the path can read or write a caller's bf16 tensor at p itself: no padding, and for
  // cuDNN, whose tensors promise 16-byte alignment, an aligned address (our flash kernel picks
  // its load width from the addresses).
  bool in_place(const void* p) const {
    return width == head_dim && (!cudnn || reinterpret_cast<uintptr_t>(p) % 16 == 0);
  }
};

// The bf16 tensor a fast path reads: the caller's own when it is bf16 at the path's width (bf16
// storage, no padding), else a converted or padded copy from the stream-ordered pool.
class FastInput {
 public:
  FastInput(const float* src, int64_t rows, const FastLayout& t, cudaStream_t stream)
      : copy_(size_t(rows) * t.width, stream), data_(copy_.data()) {
    to_padded_bf16(copy_.data(), src, rows, t.head_dim, t.width, stream);
  }
  FastInput(const bf16* src, int64_t rows, const FastLayout& t, cudaStream_t stream)
      : copy_(t.in_place(src) ? 0 : size_t(rows) * t.width, stream),
        data_(t.in_place(src) ? src : copy_.data()) {
    if (!t.in_place(src)) to_padded_bf16(copy_.data(), src, rows, t.head_dim, t.width, stream);
  }
  const bf16* data() const { return data_; }

 private:
  ScratchBuffer<bf16> copy_;  // empty when the caller's tensor is read directly
  const bf16* data_;
};

// The bf16 tensor a fast path writes, and its way into the caller's dst (float or bf16): dst
// itself when the path can write it in place, else a pool block that store() copies out.
template <class D>
class FastOutput {
 public:
  FastOutput(D* dst, int64_t rows, const FastLayout& t, cudaStream_t stream)
      : dst_(dst),
        rows_(rows),
        head_dim_(t.head_dim),
        width_(t.width),
        in_place_(std::is_same_v<D, bf16> && t.in_place(dst)),
        copy_(in_place_ ? 0 : size_t(rows) * t.width, stream) {}
  bf16* data() const {
    if constexpr (std::is_same_v<D, bf16>)
      if (in_place_) return dst_;
    return copy_.data();
  }
  void store(cudaStream_t stream) const {
    if (!in_place_) from_padded_bf16(dst_, copy_.data(), rows_, head_dim_, width_, stream);
  }

 private:
  D* dst_;
  int64_t rows_;
  int head_dim_, width_;
  bool in_place_;
  ScratchBuffer<bf16> copy_;
};

}  // namespace

AttentionPaths::ShapeKey AttentionPaths::key_of(const AttentionShape& s, bool moda) {
  return std::make_tuple(moda, s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim);
}

AttentionPath AttentionPaths::path_for(const AttentionShape& s, bool moda) {
  auto it = chosen_.find(key_of(s, moda));
  if (it == chosen_.end()) {
    // One choice (and one note) per shape: a plain attention and MoDA's sequence part of the
    // same shape take the same path.
    const auto other = chosen_.find(key_of(s, !moda));
    it = chosen_.emplace(key_of(s, moda), other != chosen_.end() ? other->second : choose(s)).first;
  }
  return it->second.path;
}

bool AttentionPaths::fall_back_after_cudnn_failed(const AttentionShape& s, const std::string& why) {
  if (requested_ != AttentionPath::automatic || !flash_attention_supports(s)) return false;
  const std::string reason = "cuDNN failed to run " + describe(s) + " (" + why + ")";
  note(reason + "; using our flash kernel from now on");
  for (const bool moda : {false, true}) {
    const auto it = chosen_.find(key_of(s, moda));
    if (it != chosen_.end()) it->second = {AttentionPath::flash, reason};
  }
  return true;
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
  run_fast_forward(path, o, lse, q, k, v, s, stream);
}

void AttentionPaths::run_backward(AttentionPath path, float* dq, float* dk, float* dv,
                                  const float* d_o, const float* o, const float* lse,
                                  const float* q, const float* k, const float* v,
                                  const AttentionShape& s, cudaStream_t stream) {
  if (path == AttentionPath::reference)
    return attention_backward<float>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
  run_fast_backward(path, dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
}

template <class S>
void AttentionPaths::run_fast_forward(AttentionPath path, S* o, float* lse, const S* q, const S* k,
                                      const S* v, const AttentionShape& s, cudaStream_t stream) {
  const FastLayout t(s, path);
  const FastInput q16(q, t.q_rows, t, stream), k16(k, t.kv_rows, t, stream),
      v16(v, t.kv_rows, t, stream);
  const FastOutput<S> o16(o, t.q_rows, t, stream);
  if (path == AttentionPath::cudnn) {
    try {
      cudnn_.forward(o16.data(), lse, q16.data(), k16.data(), v16.data(), s, stream);
    } catch (const ::db::Error& e) {
      if (!fall_back_after_cudnn_failed(s, e.what())) throw;
      return run_fast_forward(AttentionPath::flash, o, lse, q, k, v, s, stream);
    }
  } else {
    flash_attention_forward(o16.data(), lse, q16.data(), k16.data(), v16.data(), s, stream);
    if (const float scale = flash_output_scale_for_test(); scale != 1.f)
      axpby(o16.data(), scale, o16.data(), 0.f, t.q_rows * t.width, stream);
  }
  o16.store(stream);
}

template <class S>
void AttentionPaths::run_fast_backward(AttentionPath path, S* dq, S* dk, S* dv, const S* d_o,
                                       const S* o, const float* lse, const S* q, const S* k,
                                       const S* v, const AttentionShape& s, cudaStream_t stream) {
  const FastLayout t(s, path);
  const FastInput q16(q, t.q_rows, t, stream), k16(k, t.kv_rows, t, stream),
      v16(v, t.kv_rows, t, stream), o16(o, t.q_rows, t, stream), do16(d_o, t.q_rows, t, stream);
  const FastOutput<S> dq16(dq, t.q_rows, t, stream), dk16(dk, t.kv_rows, t, stream),
      dv16(dv, t.kv_rows, t, stream);
  if (path == AttentionPath::cudnn) {
    try {
      cudnn_.backward(dq16.data(), dk16.data(), dv16.data(), do16.data(), o16.data(), lse,
                      q16.data(), k16.data(), v16.data(), s, stream);
    } catch (const ::db::Error& e) {
      // The forward's o and lse are the same on either path: flash's backward takes them.
      if (!fall_back_after_cudnn_failed(s, e.what())) throw;
      return run_fast_backward(AttentionPath::flash, dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
    }
  } else {
    flash_attention_backward(dq16.data(), dk16.data(), dv16.data(), do16.data(), o16.data(), lse,
                             q16.data(), k16.data(), v16.data(), s, stream);
  }
  dq16.store(stream);
  dk16.store(stream);
  dv16.store(stream);
}

// MoDA: the sequence part through the shape's path, then the depth entries merged into o and lse
// through the log-sum-exp. The reference path keeps the MoDA kernel (the test oracle).
void AttentionPaths::moda_forward(float* o, float* lse, const float* q, const float* k,
                                  const float* v, const float* depth_k, const float* depth_v,
                                  const ModaShape& s, cudaStream_t stream) {
  const AttentionShape seq = sequence_part(s);
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
  const AttentionShape seq = sequence_part(s);
  const AttentionPath path = path_for(seq, true);
  if (path == AttentionPath::reference)
    return moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v, depth_k,
                                   depth_v, s, stream);
  run_backward(path, dq, dk, dv, d_o, o, lse, q, k, v, seq, stream);
  moda_depth_merge_backward(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, stream);
}

// --- bf16 activation storage ---

AttentionPath AttentionPaths::fast_path(AttentionPath path, const AttentionShape& s) const {
  CUDA_REQUIRE(path != AttentionPath::reference,
               "attention on bf16 storage: " + describe(s) +
                   " runs the reference kernel, which takes fp32 (widen the tensors first)");
  return path;
}

void AttentionPaths::forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             const AttentionShape& s, cudaStream_t stream) {
  run_fast_forward(fast_path(path_for(s, false), s), o, lse, q, k, v, s, stream);
}

void AttentionPaths::backward(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v,
                              const AttentionShape& s, cudaStream_t stream) {
  run_fast_backward(fast_path(path_for(s, false), s), dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
}

void AttentionPaths::moda_forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                                  const bf16* depth_k, const bf16* depth_v, const ModaShape& s,
                                  cudaStream_t stream) {
  const AttentionShape seq = sequence_part(s);
  run_fast_forward(fast_path(path_for(seq, true), seq), o, lse, q, k, v, seq, stream);
  moda_depth_merge_forward(o, lse, q, depth_k, depth_v, s, stream);
}

void AttentionPaths::moda_backward(bf16* dq, bf16* dk, bf16* dv, bf16* d_depth_k, bf16* d_depth_v,
                                   const bf16* d_o, const bf16* o, const float* lse, const bf16* q,
                                   const bf16* k, const bf16* v, const bf16* depth_k,
                                   const bf16* depth_v, const ModaShape& s, cudaStream_t stream) {
  const AttentionShape seq = sequence_part(s);
  run_fast_backward(fast_path(path_for(seq, true), seq), dq, dk, dv, d_o, o, lse, q, k, v, seq,
                    stream);
  moda_depth_merge_backward(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, stream);
}

}  // namespace db::cuda
