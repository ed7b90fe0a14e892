// Work on an emulated stream. The emulated device runs nothing when it is issued: each stream is
// a queue, drained when the host waits for it (cudaStreamSynchronize, cudaEventSynchronize,
// cudaDeviceSynchronize, a synchronous copy, cudaStreamQuery) or when work it depends on must run
// first (an event another stream waits for). Streams are drained in an order chosen to expose a
// missing wait: work on another stream that was not waited for has not run yet.
#pragma once
#include <cuda_runtime.h>

#include <functional>

namespace db::emulation {

// Appends `work` to `stream` (nullptr: the legacy default stream, with its implicit
// synchronisation with the blocking streams). While `stream` is being captured into a graph the
// work is recorded into the graph instead and runs at each replay. `what` names it in errors.
// Returns what CUDA would: cudaSuccess, or the capture error (e.g. the legacy stream used while
// another stream of this thread captures).
cudaError_t enqueue(cudaStream_t stream, const char* what, std::function<void()> work);

// Errors raised while emulated work runs (a kernel's hazard, an out-of-bounds access) are
// reported as a sticky cudaErrorLaunchFailure-like error by the next runtime call, with the
// message printed to stderr once, as a device fault would be. Library emulations may throw
// db::emulation::DeviceFault (simt/fault.hpp) from inside `work`.

}  // namespace db::emulation
