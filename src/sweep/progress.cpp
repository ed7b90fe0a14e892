#include "sweep/progress.hpp"

#include <cstdio>
#include <map>

#include "core/format.hpp"
#include "sweep/run_status.hpp"

namespace db::sweep {
namespace {

std::string format_count(double value) {
  char text[32];
  if (value >= 1e6)
    std::snprintf(text, sizeof text, "%.1fM", value / 1e6);
  else if (value >= 1e3)
    std::snprintf(text, sizeof text, "%.1fK", value / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

}  // namespace

SweepProgress::SweepProgress(const std::vector<PlannedRun>& runs)
    : runs_(runs), start_(std::chrono::steady_clock::now()) {
  for (const PlannedRun& run : runs)
    final_at_start_.push_back(is_final_status(run_status(run.config)));
}

std::string SweepProgress::line() const {
  std::map<std::string, int> final_counts;
  int done = 0, running = 0;
  double tokens_this_session = 0, tokens_left = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    const std::string status = run_status(runs_[i].config);
    if (is_final_status(status)) {
      ++done;
      ++final_counts[status];
      if (!final_at_start_[i]) tokens_this_session += double(runs_[i].tokens);
    } else {
      running += status == "unfinished" ? 1 : 0;  // started (or interrupted) and not final
      tokens_left += double(runs_[i].tokens);
    }
  }
  std::string text =
      "[sweep] progress: " + std::to_string(done) + "/" + std::to_string(runs_.size()) + " runs";
  std::string counts;
  for (const auto& [status, count] : final_counts)
    counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + status;
  if (!counts.empty()) text += " (" + counts + ")";
  text += ", " + std::to_string(running) + " unfinished";
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tokens_this_session > 0 && elapsed > 0) {
    const double rate = tokens_this_session / elapsed;
    text += ", " + format_count(rate) + " tok/s";
    if (tokens_left > 0) text += ", ETA " + format_duration(tokens_left / rate);
  }
  return text;
}

}  // namespace db::sweep
