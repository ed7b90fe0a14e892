// The self-describing root attributes of a run file (doc/hdf5-schema.md).
#pragma once
#include <map>
#include <string>

#include "io/run_file.hpp"
#include "train/run_config.hpp"

namespace db {

class Backend;

// 16 hex digits: FNV-1a of the resolved config without the keys that do not change results
// (threads, logging, output), so a resumed run can check its checkpoint belongs to it.
std::string run_id(const RunConfig& config);
// The keys of a config's INI text (RunConfig::to_ini) that enter the run id, "section.key" →
// value: comparing two of them names what makes a finished run stale.
std::map<std::string, std::string> result_keys(const std::string& ini_text);
std::string iso_time_now();
// Writes every root attribute but the status ones; a resumed run keeps its start_time.
// backend: the run's (its device_name, host threads and properties); null when the run could
// not start (a failed run's file).
void write_run_metadata(RunFile& file, const RunConfig& config, int ranks, bool resumed = false,
                        const Backend* backend = nullptr);

}  // namespace db
