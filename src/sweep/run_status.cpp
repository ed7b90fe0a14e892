#include "sweep/run_status.hpp"

#include <filesystem>
#include <optional>

#include "io/hdf5_handle.hpp"
#include "io/hdf5_library.hpp"
#include "io/run_file.hpp"
#include "train/run_metadata.hpp"
#include "train/trainer.hpp"

namespace db::sweep {

namespace {
// A root string attribute of the finished run file; nullopt when it cannot be read.
std::optional<std::string> finished_attribute(const RunConfig& config, const char* name) {
  const RunPaths paths = RunPaths::of(config);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file(H5Fopen(paths.run_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), close_hdf5_file);
  if (!file) return std::nullopt;
  try {
    return read_string_attribute(file.get(), name);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

std::string run_status_reason(const RunConfig& config) {
  if (!std::filesystem::exists(RunPaths::of(config).run_file)) return "";
  return finished_attribute(config, "status_reason").value_or("");
}

std::vector<std::string> stale_keys(const RunConfig& config) {
  if (!std::filesystem::exists(RunPaths::of(config).run_file)) return {};
  const std::optional<std::string> id = finished_attribute(config, "run_id");
  if (!id || *id == run_id(config)) return {};
  if (finished_attribute(config, "status") == "failed") return {};  // retried by its own rules
  const auto before = result_keys(finished_attribute(config, "config").value_or(""));
  const auto now = result_keys(config.to_ini());
  std::vector<std::string> changed;
  for (const auto& [key, value] : now) {
    const auto old = before.find(key);
    const std::string was = old == before.end() ? "(absent)" : old->second;
    if (was != value) changed.push_back(key + ": " + was + " -> " + value);
  }
  for (const auto& [key, value] : before)
    if (!now.count(key)) changed.push_back(key + ": " + value + " -> (absent)");
  if (changed.empty()) changed.push_back("run id " + *id + " -> " + run_id(config));
  return changed;
}

std::string run_status(const RunConfig& config) {
  const RunPaths paths = RunPaths::of(config);
  if (std::filesystem::exists(paths.run_file)) {
    const std::string status = finished_attribute(config, "status").value_or("unreadable");
    if ((status == "completed" || status == "diverged") && !stale_keys(config).empty())
      return "stale";
    return status;
  }
  return std::filesystem::exists(paths.run_file + ".tmp") ? "unfinished" : "pending";
}

bool is_final_status(const std::string& status) {
  return status == "completed" || status == "diverged" || status == "failed";
}

}  // namespace db::sweep
