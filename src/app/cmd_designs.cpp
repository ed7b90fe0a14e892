// `depthbench designs [--json]`: every registered residual design with its display name,
// options (defaults and valid values), no-decay parameters and per-token state.
#include <mpi.h>

#include <cstdio>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "app/registry_listing.hpp"

namespace db::app {

int run_designs_command(int argc, char** argv) {
  namespace po = boost::program_options;
  po::options_description described(
      "usage: depthbench designs [--json]\n\n"
      "Lists the registered residual designs as their registry entries describe them.\n\n"
      "options");
  described.add_options()("help,h", "print this help")(
      "json", "print JSON (the postprocess reads display names and order from it)");
  po::variables_map vm;
  if (const auto stop = parse_command_line("designs", argc, argv, described, vm)) return *stop;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;
  const std::string text = vm.count("json") ? designs_json() : designs_text();
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace db::app
