// The overall progress of a sweep as one line: runs done out of all (by status), how many are
// running, the training throughput of this session and an ETA. Read from the run files in the
// output directory, so every group leader can print it when one of its runs ends.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "sweep/sweep_plan.hpp"

namespace db::sweep {

class SweepProgress {
 public:
  // Records which runs were already final, so the throughput counts this session's work only.
  explicit SweepProgress(const std::vector<PlannedRun>& runs);
  // e.g. "[sweep] progress: 7/30 runs (6 completed, 1 diverged), 2 running, 41.2K tok/s,
  // ETA 1h05m".
  std::string line() const;

 private:
  const std::vector<PlannedRun>& runs_;
  std::vector<bool> final_at_start_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace db::sweep
