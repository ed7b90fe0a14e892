#include "io/stored_paths.hpp"

#include <glob.h>

#include <filesystem>

namespace db {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> matches(const std::string& pattern) {
  std::vector<std::string> files;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return files;
}

}  // namespace

std::string absolute_pattern(const std::string& pattern) {
  const fs::path path(pattern);
  return path.is_absolute() ? pattern : (fs::current_path() / path).lexically_normal().string();
}

std::vector<std::string> expand_stored_globs(const std::vector<std::string>& patterns,
                                             const std::string& stored_in) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    std::vector<std::string> found = matches(pattern);
    if (found.empty() && !fs::path(pattern).is_absolute()) {
      std::error_code error;
      fs::path folder = fs::absolute(stored_in, error).parent_path();
      for (; found.empty() && !folder.empty(); folder = folder.parent_path()) {
        found = matches((folder / pattern).string());
        if (folder == folder.root_path()) break;
      }
    }
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

}  // namespace db
