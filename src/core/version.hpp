// DepthBench's version and the git commit it was configured from (run files record both).
// Defined in a file CMake generates, so a new commit recompiles that one file only.
#pragma once

namespace db {

const char* software_version();
const char* git_commit();

}  // namespace db
