// train.state_dtype = bf16 (ops/ops_options.hpp): the designs with a state of their own keep it
// in bf16 where it passes from one sublayer to the next, forward and backward (doc/performance.md,
// "bf16 state, measured first"). Rounded here, in T buffers (one more pass, no bytes saved):
//   HC/mHC   the n streams after each merge (and the first, the embedding's copies); their
//            gradient after each sublayer's backward (and the readout's);
//   AttnRes  the gradient of each sublayer's output before its core's backward.
// AttnRes's sources and the gradients of its mixes are stored in bf16 buffers instead
// (state_values.hpp), rounded as here: the same values.
// Arithmetic stays in T.
#pragma once
#include <cstdint>

#include "core/bfloat16.hpp"
#include "model/backbone.hpp"
#include "ops/launch.hpp"

namespace db {

// x[i] = x[i] rounded to bf16 (a double through float first), to nearest, ties to even.
template <class T>
struct RoundToBf16 {
  T* x;
  DB_HD void operator()(int64_t i) const { x[i] = T(to_float(to_bfloat16(float(x[i])))); }
};

// Rounds count values of the design's state (or their gradient) when train.state_dtype = bf16.
template <class T>
void round_state(Backbone<T>& net, T* x, int64_t count) {
  if (net.bf16_state()) for_each_index(net.ops().space(), count, RoundToBf16<T>{x});
}

}  // namespace db
