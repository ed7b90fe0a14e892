// Where a planned run stands, read from its files in the output directory: `completed`,
// `diverged` or `failed` (NAME.h5 and its status attribute), `unfinished` (NAME.h5.tmp: started,
// resumable), `stale` (a completed or diverged NAME.h5 whose run id differs from the config's:
// it was trained with other settings) or `pending` (no file yet).
#pragma once
#include <string>
#include <vector>

#include "train/run_config.hpp"

namespace db::sweep {

std::string run_status(const RunConfig& config);
// For a stale run, "key: old -> new" for every result-changing key that differs; else empty.
std::vector<std::string> stale_keys(const RunConfig& config);
// The status_reason of a finished run file ("" when there is none).
std::string run_status_reason(const RunConfig& config);
// completed, diverged and failed are final: a sweep skips such runs.
bool is_final_status(const std::string& status);

}  // namespace db::sweep
