// depthbench sweep: every run of a suite over MPI. MPI_COMM_WORLD is split into communicators
// of G ranks; group leaders take run indices dynamically (longest runs first) and each run is
// trained data-parallel inside its group by train_run, which skips completed runs and resumes
// unfinished ones. A lock per run keeps two sweeps on one directory from training a run twice.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "app/commands.hpp"
#include "app/sweep_options.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "data/validation_windows.hpp"
#include "diag/diagnose.hpp"
#include "sweep/dispatcher.hpp"
#include "sweep/input_check.hpp"
#include "sweep/progress.hpp"
#include "sweep/run_lock.hpp"
#include "sweep/run_notes.hpp"
#include "sweep/run_status.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/stop_signal.hpp"
#include "train/trainer.hpp"

namespace db::app {
namespace {

// Exit status when runs remain unfinished (interrupted, or held by another sweep): the job
// scripts relaunch on it (EX_TEMPFAIL).
constexpr int kExitUnfinished = 75;
// Exit status when the machine stopped the sweep (disk full, I/O error): the interrupted run is
// resumable, but relaunching before the cause is fixed would fail again (EX_IOERR).
constexpr int kExitEnvironment = 74;
// Exit status when every run of the suite is recorded failed: nothing was trained.
constexpr int kExitAllFailed = 1;

// Finished runs trained with another config than the suite's now. Unless told to retrain them
// (their files are moved aside as NAME.h5.stale), the sweep refuses to mix old and new results:
// returns the message naming each such run and the keys that differ ("" when none).
std::string handle_stale_runs(const std::vector<sweep::PlannedRun>& runs, bool rerun) {
  std::string message;
  int stale = 0;
  for (const sweep::PlannedRun& run : runs) {
    const std::vector<std::string> keys = sweep::stale_keys(run.config);
    if (keys.empty()) continue;
    const std::string file = RunPaths::of(run.config).run_file;
    if (rerun) {
      std::filesystem::rename(file, file + ".stale");
      std::printf("[sweep] %s: trained with another config, moved aside to %s.stale\n",
                  run.config.run_name().c_str(), file.c_str());
      continue;
    }
    if (++stale <= 3) {
      message += "\n  " + file + ":";
      for (const std::string& key : keys) message += " " + key + ";";
    }
  }
  if (stale == 0) return "";
  return std::to_string(stale) +
         " finished run(s) were trained with another config than the suite's; retrain them with "
         "--rerun-stale (old files kept as NAME.h5.stale) or choose another --out:" +
         message;
}

// The suite's diagnostics on a run that has just completed, on the run's own group, with their
// measured time beside the run's training time (`plan` estimates both). A failure here is
// reported and the sweep goes on: the run file and its training results stay intact
// (diagnostics are written atomically), and `depthbench diagnose` can be run again later.
void diagnose_run(const std::string& run_file, const std::vector<std::string>& names,
                  const Communicator& group, bool quiet, double training_seconds) {
  diag::DiagnoseOptions options;
  options.run_file = run_file;
  if (names != std::vector<std::string>{"all"}) options.only = names;
  options.verbose = !quiet;
  try {
    const diag::DiagnoseReport report = diag::run_diagnostics(options, group);
    double seconds = 0;
    for (const diag::DiagnoseReport::Entry& entry : report.entries) seconds += entry.seconds;
    if (group.rank() == 0)
      std::printf("[sweep] diagnostics of %s: %.1f s (%.1fx its training's %.1f s)\n",
                  run_file.c_str(), seconds, seconds / std::max(training_seconds, 1e-9),
                  training_seconds);
  } catch (const std::exception& e) {
    if (group.rank() == 0)
      std::printf("[sweep] diagnostics of %s failed: %s\n", run_file.c_str(), e.what());
  }
}

// A run recorded `failed` is trained again when asked, or when it failed only because its
// design was not registered and the design now is (designs land after the suite was swept).
bool should_retry(const sweep::PlannedRun& run, bool retry_failed) {
  if (sweep::run_status(run.config) != "failed") return false;
  if (retry_failed) return true;
  return run.design_registered &&
         sweep::run_status_reason(run.config).find("unknown architecture") != std::string::npos;
}

// Every run of the suite recorded `failed`: a sweep that produced nothing must not look like a
// success to a batch job.
bool all_failed(const std::vector<sweep::PlannedRun>& runs) {
  return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const sweep::PlannedRun& r) {
    return sweep::run_status(r.config) == "failed";
  });
}

// A failed run's reason in its own NAME.log, where its step lines would have been: a run that
// fails before training starts (a bad file, an unknown design) writes nothing there itself.
void append_to_log(const std::string& log, const std::string& name, const std::string& reason) {
  if (std::FILE* f = std::fopen(log.c_str(), "a")) {
    std::fprintf(f, "%s: failed: %s\n", name.c_str(), reason.c_str());
    std::fclose(f);
  }
}

// The state of every run after the sweep, one line per state; true when all are final.
bool report(const std::vector<sweep::PlannedRun>& runs) {
  std::map<std::string, int> counts;
  for (const sweep::PlannedRun& run : runs) {
    const std::string status = sweep::run_status(run.config);
    ++counts[status];
    if (status == "failed" || status == "diverged" || status == "unfinished")
      std::printf("[sweep]   %-10s %s\n", status.c_str(), run.config.run_name().c_str());
  }
  std::printf("[sweep] %zu runs:", runs.size());
  for (const auto& [status, count] : counts) std::printf(" %d %s", count, status.c_str());
  std::printf("\n");
  return std::all_of(runs.begin(), runs.end(), [](const sweep::PlannedRun& r) {
    return sweep::is_final_status(sweep::run_status(r.config));
  });
}

}  // namespace

int run_sweep_command(int argc, char** argv) {
  SweepOptions options;
  if (!parse_sweep_options(argc, argv, /*is_sweep=*/true, options)) return 0;
  install_stop_signal_handlers();
  Communicator world = Communicator::world();
  const int G = options.ranks_per_run;
  DB_REQUIRE(world.size() % G == 0, "--ranks-per-run " + std::to_string(G) +
                                        " does not divide the " + std::to_string(world.size()) +
                                        " ranks");
  const sweep::Suite suite = sweep::parse_suite_file(options.suite_file);
  const std::string out = options.out_dir.empty() ? "runs/" + suite.name : options.out_dir;
  std::vector<sweep::PlannedRun> runs = sweep::plan_suite(suite, out);
  // Cores divided among all world ranks on the node: train_run alone would divide by the ranks
  // of the run's group only and oversubscribe the node.
  const int threads = world.threads_per_rank_on_node();
  for (sweep::PlannedRun& run : runs) {
    DB_REQUIRE(run.config.recipe.global_batch_sequences % G == 0,
               "train.global_batch (" + std::to_string(run.config.recipe.global_batch_sequences) +
                   ") is not a multiple of --ranks-per-run " + std::to_string(G));
    if (run.config.threads == 0) run.config.threads = threads;
  }
  // Inputs before any run starts: a wrong glob or dtype would otherwise record every run failed.
  std::string inputs;
  if (world.rank() == 0) {
    const sweep::InputCheck check = sweep::check_suite_inputs(suite.base);
    for (const std::string& problem : check.problems) inputs += "\n  " + problem;
    if (!check.ok())
      inputs = "the suite's inputs have " + std::to_string(check.problems.size()) +
               " problem(s); no run was started:" + inputs;
    else if (check.validation)
      if (const std::string warning = data::thin_validation_warning(*check.validation);
          !warning.empty())
        std::printf("[sweep] warning: %s\n", warning.c_str());
  }
  world.broadcast(inputs, 0);
  DB_REQUIRE(inputs.empty(), inputs);
  std::string stale = world.rank() == 0 ? handle_stale_runs(runs, options.rerun_stale) : "";
  world.broadcast(stale, 0);
  DB_REQUIRE(stale.empty(), stale);
  if (world.rank() == 0) {
    for (const sweep::PlannedRun& run : runs)
      if (const std::string note = sweep::design_note(run.config.model); !note.empty())
        std::printf("[sweep] warning: %s: %s\n", run.config.run_name().c_str(), note.c_str());
    std::filesystem::create_directories(out);
    std::printf("[sweep] %s: %zu runs on %d ranks, %d group(s) of %d, into %s\n",
                suite.name.c_str(), runs.size(), world.size(), world.size() / G, G, out.c_str());
    std::fflush(stdout);
  }
  world.barrier();

  const int group_index = world.rank() / G;
  Communicator group = Communicator::split(world, group_index, world.rank());
  const bool leader = group.rank() == 0;
  bool environment_fault = false;
  int checkpointed = 0;    // runs this group stopped on a signal, each with a checkpoint
  int skipped_failed = 0;  // runs recorded failed by an earlier sweep, left as they are
  std::optional<sweep::SweepProgress> progress;
  if (leader && !options.quiet) progress.emplace(runs);
  {
    sweep::Dispatcher dispatcher(world, group, int64_t(runs.size()));
    bool stop = false;
    for (int64_t i; (i = dispatcher.next(stop || stop_requested())) >= 0;) {
      const RunConfig& config = runs[i].config;
      const std::string name = config.run_name();
      const std::string stem = (std::filesystem::path(out) / name).string();
      std::optional<sweep::RunLock> lock;
      int locked = 1;
      if (leader) {
        lock = sweep::RunLock::try_acquire(stem + ".lock");
        locked = lock ? 1 : 0;
      }
      MPI_CHECK(MPI_Bcast(&locked, 1, MPI_INT, 0, group.handle()));
      if (!locked) {
        if (leader)
          std::printf("[sweep] run %lld/%zu %s: busy, another sweep holds its lock\n",
                      (long long)i + 1, runs.size(), name.c_str());
        continue;
      }
      if (leader && !should_retry(runs[i], options.retry_failed) &&
          sweep::run_status(config) == "failed")
        ++skipped_failed;
      if (leader && should_retry(runs[i], options.retry_failed)) {
        std::filesystem::remove(stem + ".h5");  // under the run's lock
        std::printf("[sweep] run %lld/%zu %s: recorded failed, training it again\n",
                    (long long)i + 1, runs.size(), name.c_str());
      }
      if (leader) {
        std::printf("[sweep] run %lld/%zu %s: start on group %d\n", (long long)i + 1, runs.size(),
                    name.c_str(), group_index);
        std::fflush(stdout);
      }
      const TrainResult result = train_run(config, group, options.verbose);
      if (leader) {
        std::printf("[sweep] run %lld/%zu %s: %s%s%s (%.1f s)\n", (long long)i + 1, runs.size(),
                    name.c_str(), result.status.c_str(), result.reason.empty() ? "" : ": ",
                    result.reason.c_str(), result.seconds);
        std::fflush(stdout);
      }
      if (leader && result.status == "failed") append_to_log(stem + ".log", name, result.reason);
      if (result.status == "completed" && !suite.diagnostics.empty())
        diagnose_run(stem + ".h5", suite.diagnostics, group, !options.verbose, result.seconds);
      if (leader && progress && result.status != "skipped") {
        std::printf("%s\n", progress->line().c_str());
        std::fflush(stdout);
      }
      stop = stop || result.status == "interrupted";
      checkpointed += leader && result.status == "interrupted" && !result.environment_fault;
      environment_fault = environment_fault || result.environment_fault;
    }
  }  // the dispatcher's window is freed collectively here
  world.barrier();
  int exit_code = 0;
  const int skipped = int(world.allreduce_sum(double(skipped_failed)));
  if (world.rank() == 0) {
    exit_code = report(runs) ? 0 : kExitUnfinished;
    if (skipped > 0)
      std::printf(
          "[sweep] %d run(s) recorded failed by an earlier sweep were skipped; --retry-failed "
          "trains them again\n",
          skipped);
    if (all_failed(runs)) {
      std::printf(
          "[sweep] every run failed (the reason of each is in its NAME.log and its run file's "
          "status_reason)\n");
      exit_code = kExitAllFailed;
    }
    std::fflush(stdout);
  }
  MPI_CHECK(MPI_Bcast(&exit_code, 1, MPI_INT, 0, world.handle()));
  // A stop signal's last word: what was saved and what to do next.
  const int stopped_runs = int(world.allreduce_sum(double(checkpointed)));
  if (world.rank() == 0 && (stopped_runs > 0 || stop_requested())) {
    std::printf(
        "[sweep] stopped by a signal: %d run%s checkpointed; rerun the same command to "
        "resume\n",
        stopped_runs, stopped_runs == 1 ? "" : "s");
    std::fflush(stdout);
  }
  if (world.allreduce_max(environment_fault ? 1.0 : 0.0) > 0) {
    if (world.rank() == 0)
      std::fprintf(stderr,
                   "depthbench sweep: stopped by a fault of the machine (see the run's reason "
                   "above); its run resumes from the last checkpoint once the cause is fixed\n");
    exit_code = kExitEnvironment;
  }
  return exit_code;
}

}  // namespace db::app
