// SIGTERM and SIGUSR1 (what Slurm's --signal and a scheduler's pre-emption send) and a first
// SIGINT (Ctrl-C) request a checkpoint and a clean stop at the end of the current step; a second
// SIGINT ends the process at once. (Under mpirun a Ctrl-C reaches mpirun, not the ranks: Open MPI
// turns it into SIGTERM to every rank, then SIGKILL; doc/sweeps.md "Signals".)
#pragma once

namespace db {

void install_stop_signal_handlers();
bool stop_requested();
void request_stop();  // for tests

}  // namespace db
