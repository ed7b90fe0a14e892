#include "app/installed_files.hpp"

#include <filesystem>

#include "core/error.hpp"

// The suites' folder relative to the executable's, set by cmake/Install.cmake from the layout.
#ifndef DEPTHBENCH_SUITES_FROM_BIN
#define DEPTHBENCH_SUITES_FROM_BIN "../share/depthbench/suites"
#endif
#ifndef DEPTHBENCH_HF_MODELING_FROM_BIN
#define DEPTHBENCH_HF_MODELING_FROM_BIN "../share/depthbench/hf_modeling"
#endif

namespace db::app {
namespace fs = std::filesystem;

std::string locate_suite(const std::string& given) {
  std::error_code error;
  if (given.empty() || fs::exists(given, error) || given.find('/') != std::string::npos)
    return given;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (error) return given;
  const fs::path name = fs::path(given).extension() == ".ini" ? given : given + ".ini";
  // Installed (bin/../share/depthbench/suites), then a build folder inside the clone (build/..).
  for (const fs::path& folder : {executable.parent_path() / DEPTHBENCH_SUITES_FROM_BIN,
                                 executable.parent_path() / ".." / "input"})
    if (fs::exists(folder / name, error)) return (folder / name).lexically_normal().string();
  return given;
}

std::string locate_hf_modeling() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  DB_REQUIRE(!error,
             "cannot find the executable's folder (/proc/self/exe) to locate the "
             "Hugging Face modelling code");
  // Installed, then a build folder inside the clone (build/..).
  const fs::path installed = executable.parent_path() / DEPTHBENCH_HF_MODELING_FROM_BIN;
  const fs::path clone = executable.parent_path() / ".." / "src" / "io" / "hf_modeling";
  for (const fs::path& folder : {installed, clone})
    if (fs::exists(folder / "modeling_depthbench.py", error))
      return folder.lexically_normal().string();
  throw Error("the Hugging Face modelling code (modeling_depthbench.py) is in neither " +
              installed.lexically_normal().string() + " nor " + clone.lexically_normal().string() +
              ": install DepthBench (cmake --install)");
}

}  // namespace db::app
