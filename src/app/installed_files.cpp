#include "app/installed_files.hpp"

#include <filesystem>

// The suites' folder relative to the executable's, set by cmake/Install.cmake from the layout.
#ifndef DEPTHBENCH_SUITES_FROM_BIN
#define DEPTHBENCH_SUITES_FROM_BIN "../share/depthbench/suites"
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

}  // namespace db::app
