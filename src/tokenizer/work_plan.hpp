// Which part of the corpus each MPI rank reads. Ranks take consecutive stretches of the input
// list, so that their outputs, concatenated in rank order, are the corpus in input order
// whatever the number of ranks (doc/tokenize.md, "Ranks and threads").
#pragma once
#include <cstdint>
#include <vector>

namespace db::tokenizer {

struct WorkItem {
  std::size_t file;
  // Plain JSONL: the lines starting in [begin, end) of the file. Otherwise the whole file:
  // begin 0, end kWholeFile.
  int64_t begin = 0, end = 0;
};
inline constexpr int64_t kWholeFile = INT64_MAX;

// The inputs' bytes (in list order) are cut into `ranks` equal ranges. A splittable file (plain
// JSONL) is cut where the ranges are; any other file goes whole to the rank whose range holds
// its middle byte.
std::vector<WorkItem> plan_work(const std::vector<int64_t>& bytes,
                                const std::vector<bool>& splittable, int rank, int ranks);

}  // namespace db::tokenizer
