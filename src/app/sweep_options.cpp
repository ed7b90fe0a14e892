#include "app/sweep_options.hpp"

#include <boost/program_options.hpp>
#include <iostream>

#include "app/installed_files.hpp"
#include "core/error.hpp"

namespace db::app {
namespace po = boost::program_options;

bool parse_sweep_options(int argc, char** argv, bool is_sweep, SweepOptions& options) {
  po::options_description desc("options");
  desc.add_options()("help,h", "print this help")(
      "suite", po::value<std::string>(&options.suite_file),
      "suite file, or the name of a shipped suite (demo.ini; doc/suites.md)")(
      "out", po::value<std::string>(&options.out_dir),
      "output directory of run files (default runs/SUITE_NAME)")(
      "ranks-per-run", po::value<int>(&options.ranks_per_run)->default_value(1),
      is_sweep ? "ranks G of each run's communicator (world size must be a multiple)"
               : "ranks G of each run, for the memory per rank (a CPU run on G > 1 ranks adds "
                 "its MPI gradient sum's scratch)");
  if (is_sweep)
    desc.add_options()("quiet", po::bool_switch(&options.quiet),
                       "only the run start and end lines, no overall progress lines")(
        "verbose", po::bool_switch(&options.verbose),
        "also every run's step and validation lines (always written to DIR/NAME.log)")(
        "retry-failed", po::bool_switch(&options.retry_failed),
        "train runs recorded failed again (runs that failed for a design now registered always "
        "are)")("rerun-stale", po::bool_switch(&options.rerun_stale),
                "retrain runs whose finished file was trained with another config (the old file "
                "is kept as NAME.h5.stale)");
  else
    desc.add_options()("mfu", po::value<double>(&options.mfu),
                       "model FLOPs utilisation for the GPU-hour estimate")(
        "peak-tflops", po::value<double>(&options.peak_tflops),
        "peak TFLOP/s per GPU for the estimate");
  po::positional_options_description positional;
  positional.add("suite", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(e.what());
  }
  if (vm.count("help")) {
    std::cout
        << (is_sweep
                ? "usage: mpirun -np N depthbench sweep SUITE.ini --ranks-per-run G --out DIR\n"
                : "usage: depthbench plan SUITE.ini [--out DIR] [--ranks-per-run G]\n")
        << desc << "\n";
    return false;
  }
  DB_REQUIRE(!options.suite_file.empty(), "missing the suite file (e.g. input/demo.ini)");
  options.suite_file = locate_suite(options.suite_file);  // `demo.ini`: the shipped suite
  DB_REQUIRE(options.ranks_per_run >= 1, "--ranks-per-run must be at least 1");
  DB_REQUIRE(vm.count("mfu") == 0 || (options.mfu > 0 && options.mfu <= 1),
             "--mfu " + std::to_string(options.mfu) + ": must be in (0, 1]");
  DB_REQUIRE(vm.count("peak-tflops") == 0 || options.peak_tflops > 0, "--peak-tflops must be > 0");
  return true;
}

}  // namespace db::app
