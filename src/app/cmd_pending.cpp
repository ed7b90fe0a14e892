// Subcommands whose issues have not landed yet say so plainly instead of pretending to work.
// Each line disappears when its cmd_<name>.cpp lands.
#include <cstdio>

#include "app/commands.hpp"

namespace db::app {
namespace {
int not_available(const char* name, const char* issue) {
  std::fprintf(stderr, "depthbench %s: not available in this build yet (%s)\n", name, issue);
  return 3;
}
}  // namespace

int run_diagnose_command(int, char**) {
  return not_available("diagnose", "diagnostics issue");
}

}  // namespace db::app
