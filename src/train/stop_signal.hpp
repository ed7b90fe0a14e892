// SIGTERM and SIGUSR1 (what Slurm's --signal and a scheduler's pre-emption send) request a
// checkpoint and a clean stop at the end of the current step.
#pragma once

namespace db {

void install_stop_signal_handlers();
bool stop_requested();
void request_stop();  // for tests

}  // namespace db
