#include "train/gradient_buckets.hpp"

#include <algorithm>
#include <cmath>

namespace db {
namespace {

// b of a name `blocks.{b}.…`, or −1.
int block_of(const std::string& name) {
  const std::string prefix = "blocks.";
  if (name.rfind(prefix, 0) != 0) return -1;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return -1;
  return std::stoi(name.substr(prefix.size(), dot - prefix.size()));
}

// A range of the buffer whose gradients are final after one position.
struct Piece {
  int64_t begin, end;
  int final_after;
};

int64_t round_up(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

}  // namespace

int gradient_final_position(const ParameterLayout& layout, int id, std::span<const int> schedule) {
  const std::string& name = layout.spec(id).name;
  if (name == "final_norm" || name == "lm_head") return int(schedule.size());
  const int block = block_of(name);
  if (block < 0) return -1;
  for (size_t p = 0; p < schedule.size(); ++p)
    if (schedule[p] == block) return int(p);
  return -1;
}

int64_t bucket_elements_of(double megabytes) {
  const int64_t elements = int64_t(std::floor(megabytes * 1024 * 1024 / sizeof(float)));
  const int64_t a = ParameterLayout::kAlignment;
  return std::max(a, elements / a * a);
}

std::vector<GradientBucket> plan_gradient_buckets(const ParameterLayout& layout,
                                                  std::span<const int> schedule,
                                                  int64_t bucket_elements) {
  const std::vector<ParameterSpec>& specs = layout.specs();
  const int64_t a = ParameterLayout::kAlignment;
  bucket_elements = std::max(a, bucket_elements / a * a);
  // Parameters in buffer order, each with the padding after it; neighbours final at the same
  // position form one segment.
  std::vector<int> order(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) order[i] = int(i);
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return specs[x].offset < specs[y].offset; });
  std::vector<Piece> segments;
  for (size_t k = 0; k < order.size(); ++k) {
    const int64_t begin = k == 0 ? 0 : specs[order[k]].offset;
    const int64_t end = k + 1 < order.size() ? specs[order[k + 1]].offset : layout.storage_size();
    const int final_after = gradient_final_position(layout, order[k], schedule);
    if (!segments.empty() && segments.back().final_after == final_after)
      segments.back().end = end;
    else
      segments.push_back({begin, end, final_after});
  }
  // Segments larger than a bucket are cut into near-equal aligned pieces.
  std::vector<Piece> pieces;
  for (const Piece& s : segments) {
    const int64_t size = s.end - s.begin;
    const int64_t n = std::max<int64_t>(1, (size + bucket_elements - 1) / bucket_elements);
    const int64_t step = round_up((size + n - 1) / n, a);
    for (int64_t begin = s.begin; begin < s.end; begin += step)
      pieces.push_back({begin, std::min(s.end, begin + step), s.final_after});
  }
  // Neighbouring pieces packed while they fit; a bucket is final when its last piece is.
  std::vector<GradientBucket> buckets;
  for (const Piece& piece : pieces) {
    GradientBucket* last = buckets.empty() ? nullptr : &buckets.back();
    if (last && last->count + (piece.end - piece.begin) <= bucket_elements) {
      last->count += piece.end - piece.begin;
      last->final_after = std::min(last->final_after, piece.final_after);
    } else {
      buckets.push_back({piece.begin, piece.end - piece.begin, piece.final_after});
    }
  }
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const auto& x, const auto& y) { return x.final_after > y.final_after; });
  return buckets;
}

void BucketedReduction::start_next() {
  const GradientBucket& b = plan_[started_++];
  reducer_.start_sum(grads_, b.begin, b.count);
}

void BucketedReduction::gradients_final(int p) {
  if (!armed_) return;
  while (started_ < plan_.size() && plan_[started_].final_after >= p) start_next();
  reducer_.progress();
}

void BucketedReduction::start_remaining() {
  while (started_ < plan_.size()) start_next();
}

void BucketedReduction::finish() {
  start_remaining();
  reducer_.finish_sums();
}

}  // namespace db
