// Time spent in named sections of a training step (`depthbench bench --breakdown`), measured
// where the work runs: the host clock for a backend that computes on the calling thread (the
// CPU), device events for a GPU, whose calls return before their work is done. A timer is made
// by the backend (Backend::make_section_timer) and owned by whoever asks for a breakdown;
// nothing in the model or the trainer times anything unless one is attached
// (Backend::attach_section_timer, ops/timed_ops.hpp): with none attached there is no cost.
//
// Header-only interface: the CUDA library implements it without linking back to the rest.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace db {

class SectionTimer {
 public:
  struct Total {
    std::string section;
    double milliseconds = 0;
    int64_t calls = 0;
  };

  virtual ~SectionTimer() = default;
  // Sections do not nest: begin(a), the work, end(). `section` must outlive the timer (a
  // string literal: names are compared by content, kept by pointer until totals()).
  virtual void begin(const char* section) = 0;
  virtual void end() = 0;
  // Time per section since the last clear(), in the order the sections were first seen. Waits
  // for the timed work to finish.
  virtual std::vector<Total> totals() = 0;
  virtual void clear() = 0;

  // Ops wrapped for this timer (ops/timed_ops.hpp) time their calls only while it records: a
  // bench's measured steps run untimed, its breakdown step alone is timed.
  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }

 private:
  bool recording_ = true;
};

// Runs call inside `section` while the timer records, else just runs it: what the timed ops
// (ops/timed_ops.hpp, ops/timed_storage_ops.hpp) do around every op.
template <class Call>
void time_section(SectionTimer& timer, const char* section, Call&& call) {
  if (!timer.recording()) return call();
  timer.begin(section);
  try {
    call();
  } catch (...) {  // the section still ends: a later op may begin one
    timer.end();
    throw;
  }
  timer.end();
}

// The host clock (std::chrono::steady_clock): right for work done on the calling thread.
std::unique_ptr<SectionTimer> make_host_section_timer();

// Adds `milliseconds` of one call to `section` in `totals` (first-seen order kept). Inline:
// the CUDA library's timer uses it too.
inline void add_to_totals(std::vector<SectionTimer::Total>& totals, const char* section,
                          double milliseconds) {
  for (SectionTimer::Total& t : totals)
    if (t.section == section) {
      t.milliseconds += milliseconds;
      ++t.calls;
      return;
    }
  totals.push_back({section, milliseconds, 1});
}

}  // namespace db
