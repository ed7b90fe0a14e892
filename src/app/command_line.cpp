#include "app/command_line.hpp"

#include <mpi.h>

#include <iostream>

#include "core/error.hpp"

namespace db::app {
namespace po = boost::program_options;

std::optional<int> parse_command_line(const char* command, int argc, char** argv,
                                      const po::options_description& options, po::variables_map& vm,
                                      const po::positional_options_description* positional) {
  int rank = 0, initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));  // not for --help (app/main.cpp)
  if (initialized) MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(options);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      if (rank == 0) std::cout << options << "\n";
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    if (rank == 0)
      std::cerr << "depthbench " << command << ": " << e.what() << "\n" << options << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace db::app
