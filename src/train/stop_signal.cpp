#include "train/stop_signal.hpp"

#include <csignal>

namespace db {
namespace {
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) {
  g_stop = 1;
}
}  // namespace

void install_stop_signal_handlers() {
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGUSR1, on_stop_signal);
}

bool stop_requested() {
  return g_stop != 0;
}
void request_stop() {
  g_stop = 1;
}

}  // namespace db
