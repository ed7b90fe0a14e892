#include "tokenizer/work_plan.hpp"

#include <algorithm>

namespace db::tokenizer {

std::vector<WorkItem> plan_work(const std::vector<int64_t>& bytes,
                                const std::vector<bool>& splittable, int rank, int ranks) {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  const int64_t lo = total * rank / ranks, hi = total * (rank + 1) / ranks;
  std::vector<WorkItem> items;
  int64_t start = 0;
  for (std::size_t f = 0; f < bytes.size(); ++f) {
    if (splittable[f]) {
      const int64_t b = std::max(lo, start), e = std::min(hi, start + bytes[f]);
      if (b < e) items.push_back({f, b - start, e - start});
    } else {
      const int64_t middle = start + bytes[f] / 2;
      // An empty file at the very end still needs an owner: the last rank.
      if ((middle >= lo && middle < hi) || (middle == total && rank == ranks - 1))
        items.push_back({f, 0, kWholeFile});
    }
    start += bytes[f];
  }
  return items;
}

}  // namespace db::tokenizer
