#include "sweep/run_status.hpp"

#include <filesystem>
#include <optional>

#include "io/hdf5_handle.hpp"
#include "io/run_file.hpp"
#include "train/trainer.hpp"

namespace db::sweep {

namespace {
// A root string attribute of the finished run file; nullopt when it cannot be read.
std::optional<std::string> finished_attribute(const RunConfig& config, const char* name) {
  const RunPaths paths = RunPaths::of(config);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file(H5Fopen(paths.run_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
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

std::string run_status(const RunConfig& config) {
  const RunPaths paths = RunPaths::of(config);
  if (std::filesystem::exists(paths.run_file))
    return finished_attribute(config, "status").value_or("unreadable");
  return std::filesystem::exists(paths.run_file + ".tmp") ? "unfinished" : "pending";
}

bool is_final_status(const std::string& status) {
  return status == "completed" || status == "diverged" || status == "failed";
}

}  // namespace db::sweep
