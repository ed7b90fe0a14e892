// Gradients reduced in buckets while the backward pass goes on (train.reduce_bucket_mb,
// doc/backends.md "Gradient reduction"). The backward walks the blocks in reverse; once the
// layer loop has passed position p (Backbone::on_gradients_final) nothing adds to the gradients
// of its block any more, so the all-reduce of those parameters can start while the earlier
// blocks are still being differentiated. Only the last micro-batch of a step overlaps: before
// it, the gradients are still accumulating.
//
// A bucket is a contiguous range of the flat gradient buffer (doc/parameters.md) of about the
// bucket size. The plan follows from the layout, the block schedule and the bucket size alone,
// never from timing, so every rank starts the same buckets in the same order.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "model/parameters.hpp"
#include "ops/gradient_reducer.hpp"

namespace db {

// The position p after whose backward no later step adds to the gradient of parameter `id`:
// p for `blocks.{b}.*` where schedule[p] = b (the backbone's and the design's parameters of
// block b alike); n_layer = schedule.size() for `final_norm` and `lm_head` (complete once the
// readout's backward has run); −1, the end of the backward, for everything else (the embedding,
// a design's model-level parameters, a block the schedule skips).
int gradient_final_position(const ParameterLayout& layout, int id, std::span<const int> schedule);

struct GradientBucket {
  int64_t begin = 0, count = 0;  // elements of the flat gradient buffer
  int final_after = -1;          // every gradient in it is final after this position's backward
};

// Buckets in launch order: by final_after from n_layer down to −1, each group by offset. Every
// element of the storage (padding included) lies in exactly one bucket. Segments of parameters
// final at the same position are cut into pieces of at most bucket_elements (aligned to
// ParameterLayout::kAlignment) and neighbouring pieces are packed while they fit one bucket; a
// bucket is final when its last piece is.
std::vector<GradientBucket> plan_gradient_buckets(const ParameterLayout& layout,
                                                  std::span<const int> schedule,
                                                  int64_t bucket_elements);

// Elements of a bucket of `megabytes` MiB of fp32 gradients (at least one aligned group).
int64_t bucket_elements_of(double megabytes);

// Starts the buckets of a plan on the reducer as the backward announces final positions.
class BucketedReduction {
 public:
  BucketedReduction(GradientReducer& reducer, Buffer<float>& grads,
                    std::vector<GradientBucket> plan)
      : reducer_(reducer), grads_(grads), plan_(std::move(plan)) {}

  // A new step: no bucket started, positions ignored until arm().
  void begin_step() {
    started_ = 0;
    armed_ = false;
  }
  // From now on (the last micro-batch's backward), gradients_final starts buckets.
  void arm() { armed_ = true; }
  // Starts every bucket final after position p (in plan order) and lets started sums advance.
  void gradients_final(int p);
  // Starts every bucket not started yet: at the end of the backward, and on a rank whose step
  // failed, so that the peers' started sums find their partners (no rank waits for ever).
  void start_remaining();
  // start_remaining, then waits for every sum of the step.
  void finish();

  const std::vector<GradientBucket>& plan() const { return plan_; }

 private:
  void start_next();
  GradientReducer& reducer_;
  Buffer<float>& grads_;
  std::vector<GradientBucket> plan_;
  size_t started_ = 0;
  bool armed_ = false;
};

}  // namespace db
