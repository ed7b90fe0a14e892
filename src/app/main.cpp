// depthbench: the MPI-launched executable. MPI is initialised once here for every subcommand
// (Open MPI runs as a singleton without mpirun), errors become one line and a non-zero exit.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "app/commands.hpp"
#include "core/communicator.hpp"
#include "io/hdf5_library.hpp"
#include "ops/backend.hpp"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
  bool computes;  // runs a model: the backends choose their devices first
};

const Command kCommands[] = {
    {"train", db::app::run_train_command, "train one model from an INI config", true},
    {"bench", db::app::run_bench_command, "measure training throughput of one shape", true},
    {"tokenize", db::app::run_tokenize_command, "turn text into token files", false},
    {"plan", db::app::run_plan_command, "print every run of a suite without training", false},
    {"sweep", db::app::run_sweep_command, "run a suite over MPI communicators", true},
    {"diagnose", db::app::run_diagnose_command, "compute layer diagnostics of a run file", true},
    {"eval", db::app::run_eval_command, "loss of given weights on given token files", true},
    {"export", db::app::run_export_command, "write a run's weights as safetensors or for HF",
     false},
    {"designs", db::app::run_designs_command, "list the residual designs and their options", false},
    {"selftest", db::app::run_selftest_command,
     "parity checks of every design and path against the CPU in double", true},
};

// --help only prints: no MPI start-up (about 0.9 s) for it.
bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return true;
  return false;
}

void print_usage() {
  std::printf("usage: depthbench COMMAND [options]   (COMMAND --help for its options)\n\n");
  for (const Command& c : kCommands) std::printf("  %-9s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  db::prepare_backends(argv);
  db::take_over_hdf5_shutdown();  // io/hdf5_library.hpp: a failed close must not crash the exit
  const bool with_mpi = !asks_for_help(argc, argv);
  if (with_mpi) MPI_Init(&argc, &argv);
  int rank = 0;
  if (with_mpi) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int exit_code = 2;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    if (rank == 0) print_usage();
    exit_code = argc < 2 ? 2 : 0;
  } else {
    const Command* chosen = nullptr;
    for (const Command& c : kCommands)
      if (std::string(argv[1]) == c.name) chosen = &c;
    if (!chosen) {
      if (rank == 0) std::fprintf(stderr, "depthbench: unknown command '%s'\n", argv[1]);
      if (rank == 0) print_usage();
    } else {
      try {
        // Once, on every rank of the job, before any command splits it into runs: the only
        // collective on the whole job that concerns a device (nothing inside a run may use
        // MPI_COMM_WORLD; tests/backend/layering_test.cpp enforces it).
        if (with_mpi && chosen->computes) db::start_backends(db::Communicator::world());
        exit_code = chosen->run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "depthbench %s: error: %s\n", chosen->name, e.what());
        std::fflush(stderr);
        // A failed rank must not leave its peers waiting in a collective.
        int size = 1;
        if (with_mpi) MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
        exit_code = 1;
      }
    }
  }
  if (with_mpi) MPI_Finalize();
  db::shut_down_hdf5();
  return exit_code;
}
