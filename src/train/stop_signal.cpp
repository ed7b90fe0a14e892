#include "train/stop_signal.hpp"

#include <csignal>

namespace db {
namespace {
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int signal_number) {
  g_stop = 1;
  // The user's second Ctrl-C is not ignored: it ends the process (signal() is async-signal-safe).
  if (signal_number == SIGINT) std::signal(SIGINT, SIG_DFL);
}
}  // namespace

void install_stop_signal_handlers() {
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGUSR1, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
}

bool stop_requested() {
  return g_stop != 0;
}
void request_stop() {
  g_stop = 1;
}

}  // namespace db
