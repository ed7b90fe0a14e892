// The CUDA backend's SectionTimer (ops/section_timer.hpp): a pair of CUDA events around each
// section on the stream the ops run on (the legacy default stream, cuda_ops.cpp), so a section's
// time is the device's time for the work queued inside it, not the host's time to queue it.
// totals() waits for the last event; events are reused after clear().
#pragma once
#include <memory>

#include "ops/section_timer.hpp"

namespace db::cuda {

std::unique_ptr<SectionTimer> make_event_section_timer();

}  // namespace db::cuda
