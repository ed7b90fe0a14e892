// depthbench train: one run from an INI config, data-parallel over all ranks of mpirun.
#include <cstdio>
#include <filesystem>

#include "app/commands.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "sweep/run_status.hpp"
#include "train/stop_signal.hpp"
#include "train/trainer.hpp"

namespace db::app {

int run_train_command(int argc, char** argv) {
  RunConfig config;
  if (!parse_run_config(argc, argv, config,
                        "usage: depthbench train --config FILE.ini [--section.key=value ...]"))
    return 0;
  install_stop_signal_handlers();
  Communicator world = Communicator::world();
  // Asked for by name, a run that failed before (a bad path, a config error) is trained again;
  // completed and diverged runs are results and stay (delete NAME.h5 to train them again).
  if (world.rank() == 0 && sweep::run_status(config) == "failed") {
    std::printf("%s: the previous attempt failed (%s), training again\n", config.run_name().c_str(),
                sweep::run_status_reason(config).c_str());
    std::filesystem::remove(RunPaths::of(config).run_file);
  }
  // A finished file trained with other settings is not a result of this config: say which keys
  // differ instead of reporting it as done.
  std::string stale;
  if (world.rank() == 0)
    for (const std::string& key : sweep::stale_keys(config)) stale += " " + key + ";";
  world.broadcast(stale, 0);
  DB_REQUIRE(stale.empty(), RunPaths::of(config).run_file + " was trained with another config (" +
                                stale.substr(1) + "); move it away to train this config");
  world.barrier();
  const TrainResult result = train_run(config, world);
  if (world.rank() == 0) {
    if (result.status == "completed")
      std::printf("%s: completed in %.1f s, final validation loss %.4f -> %s\n",
                  config.run_name().c_str(), result.seconds, result.final_val_loss,
                  RunPaths::of(config).run_file.c_str());
    else if (result.status != "skipped" && result.status_step < 0)  // before the first step
      std::fprintf(stderr, "depthbench train: run %s %s: %s\n", config.run_name().c_str(),
                   result.status.c_str(), result.reason.c_str());
    else if (result.status != "skipped")
      std::fprintf(stderr, "depthbench train: run %s %s at step %lld: %s\n",
                   config.run_name().c_str(), result.status.c_str(), (long long)result.status_step,
                   result.reason.c_str());
  }
  if (world.rank() == 0 && result.status == "interrupted" && !result.environment_fault) {
    std::printf("1 run checkpointed at step %lld; rerun the same command to resume\n",
                (long long)result.status_step);
    std::fflush(stdout);
  }
  // The sweep's exit statuses: 75 resumable (stop signal), 74 stopped by the machine.
  if (result.status == "completed" || result.status == "skipped") return 0;
  if (result.status != "interrupted") return 1;
  return result.environment_fault ? 74 : 75;
}

}  // namespace db::app
