#include "util/glob.hpp"

#include <glob.h>

#include "core/error.hpp"

namespace db {

std::vector<std::string> expand_globs(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t g{};
    const int rc = glob(pattern.c_str(), 0, nullptr, &g);
    if (rc != 0) {
      globfree(&g);
      throw Error("no file matches " + pattern);
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return files;
}

}  // namespace db
