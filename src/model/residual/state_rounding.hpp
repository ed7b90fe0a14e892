// train.state_dtype = bf16 (ops/ops_options.hpp): the designs with a state of their own round it
// to bf16 where it passes from one sublayer to the next, forward and backward, so that a run
// shows what keeping that state in bf16 would do to training before any kernel is written for
// it (doc/performance.md, "bf16 state, measured first"):
//   HC/mHC   the n streams after each merge (and the first, the embedding's copies); their
//            gradient after each sublayer's backward (and the readout's);
//   AttnRes  each source when it is written (the embedding, every partial or block sum); the
//            gradient of each mix before its sources' backward reads it, and the gradient of each
//            sublayer's output before its core's backward.
// Arithmetic stays in T; the rounded values stay in T buffers (one more pass, no bytes saved).
// A later bf16 buffer written at the same points computes the same values.
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
