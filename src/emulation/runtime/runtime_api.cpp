// The CUDA runtime API subset the backend uses, on the emulated device: the real header's
// signatures (cuda_runtime_api.h), host memory behind device pointers (device_arena.hpp), deferred
// stream work (streams.hpp), CUDA's rules for capture, pageable copies and errors.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulation/memory_map.hpp"
#include "emulation/runtime/device_arena.hpp"
#include "emulation/runtime/emulated_device.hpp"
#include "emulation/runtime/stream_work.hpp"
#include "emulation/runtime/streams.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation {
namespace {

thread_local int current_device = 0;

// Device allocations and their sizes, the bytes in use and the high-water marks CUDA reports
// (the stream-ordered pool's, and graph allocations' separately).
struct MemoryBook {
  std::map<void*, size_t> sizes;
  size_t used = 0, pool_used = 0, pool_high = 0, graph_used = 0, graph_high = 0;
};
MemoryBook& book() {
  static MemoryBook b;
  return b;
}
std::map<void*, size_t>& pinned() {
  static std::map<void*, size_t> p;
  return p;
}

void* allocate_device(size_t bytes) {
  if (book().used + bytes > kDeviceMemoryBytes) return nullptr;
  void* p = device_arena_allocate(bytes);
  if (!p) return nullptr;
  book().sizes[p] = bytes;
  book().used += bytes;
  register_allocation(p, bytes, MemoryKind::device);
  return p;
}

// Returns false when p is not a live device allocation (a double free).
bool release_device(void* p) {
  auto it = book().sizes.find(p);
  if (it == book().sizes.end()) return false;
  unregister_allocation(p);
  device_arena_release(p, it->second);
  book().used -= it->second;
  book().sizes.erase(it);
  return true;
}

bool is_pinned(const void* p) {
  const Allocation* a = find_allocation(p);
  return a && a->kind == MemoryKind::pinned_host;
}
bool is_device(const void* p, size_t bytes = 1) {
  const Allocation* a = find_allocation(p, bytes);
  return a && a->kind == MemoryKind::device;
}

cudaError_t check_copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  // A pointer into the device arena must lie in a live allocation (else CUDA returns
  // cudaErrorInvalidValue); host pointers cannot be checked.
  if (in_device_arena(dst) && !is_device(dst, bytes)) return cudaErrorInvalidValue;
  if (in_device_arena(src) && !is_device(src, bytes)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

// A device fault turns every later call into its error, as a corrupted CUDA context does.
#define EMU_STICKY()                                                        \
  do {                                                                      \
    if (sticky_error() != cudaSuccess) return record_error(sticky_error()); \
  } while (0)

cudaError_t copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                       bool synchronous) {
  EMU_STICKY();
  if (cudaError_t e = check_copy(dst, src, bytes)) return record_error(e);
  const bool host_src = !in_device_arena(src), host_dst = !in_device_arena(dst);
  const bool pageable = (host_src && !is_pinned(src)) || (host_dst && !is_pinned(dst));
  if (pageable || synchronous)
    if (cudaError_t e = forbidden_during_capture(pageable ? "a copy with pageable host memory"
                                                          : "a synchronous copy"))
      return e;
  std::function<void()> work;
  if (host_src && !is_pinned(src)) {
    // A pageable source is staged at the call: the caller may reuse it on return.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    work = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  } else {
    work = [dst, src, bytes] { std::memmove(dst, src, bytes); };
  }
  if (cudaError_t e = enqueue(stream, "cudaMemcpy", std::move(work))) return e;
  // A copy to pageable memory returns when it is done; so does a synchronous one.
  if (synchronous || (host_dst && !is_pinned(dst))) drain(stream_of(stream));
  return record_error(sticky_error());
}

struct FunctionAttributes {
  int max_dynamic_shared = int(kDefaultSharedPerBlock);
};
std::map<const void*, FunctionAttributes>& function_attributes() {
  static std::map<const void*, FunctionAttributes> a;
  return a;
}

struct GraphExec {
  std::shared_ptr<Graph> graph;
};

int fake_pool_object;

}  // namespace

size_t max_dynamic_shared(const void* kernel) {
  auto it = function_attributes().find(kernel);
  return it == function_attributes().end() ? kDefaultSharedPerBlock
                                           : size_t(it->second.max_dynamic_shared);
}

int emulated_device_count() {
  const char* env = std::getenv("DEPTHBENCH_EMULATED_GPUS");
  return env ? std::max(0, std::atoi(env)) : kDefaultDeviceCount;
}

}  // namespace db::emulation

using namespace db::emulation;

// ---- errors ---------------------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  return take_last_error();
}
cudaError_t cudaPeekAtLastError() {
  return peek_last_error();
}
const char* cudaGetErrorName(cudaError_t error) {
  return error_name(error);
}
const char* cudaGetErrorString(cudaError_t error) {
  return error_string(error);
}

// ---- devices --------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  *count = emulated_device_count();
  return *count > 0 ? cudaSuccess : record_error(cudaErrorNoDevice);
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emulated_device_count()) return record_error(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (emulated_device_count() == 0) return record_error(cudaErrorNoDevice);
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= emulated_device_count()) return record_error(cudaErrorInvalidDevice);
  *prop = emulated_device_properties(device);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= emulated_device_count()) return record_error(cudaErrorInvalidDevice);
  const cudaDeviceProp p = emulated_device_properties(device);
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = int(p.sharedMemPerBlockOptin);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = int(p.sharedMemPerBlock);
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      break;
    default:
      return record_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  EMU_STICKY();
  if (cudaError_t e = forbidden_during_capture("cudaDeviceSynchronize")) return e;
  drain_all();
  return record_error(sticky_error());
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = kDeviceMemoryBytes;
  *free_bytes = kDeviceMemoryBytes - book().used;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    // The opt-in limit: static and dynamic shared memory together (227 KiB on an H100/H200).
    if (value < 0 || size_t(value) > kSharedPerBlockOptin)
      return record_error(cudaErrorInvalidValue);
    function_attributes()[func].max_dynamic_shared = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  return record_error(cudaErrorInvalidValue);
}

// ---- memory ---------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  EMU_STICKY();
  if (cudaError_t e = forbidden_during_capture("cudaMalloc")) return e;
  std::lock_guard lock(streams_mutex());
  *p = bytes ? allocate_device(bytes) : nullptr;
  return bytes && !*p ? record_error(cudaErrorMemoryAllocation) : cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  EMU_STICKY();
  if (!p) return cudaSuccess;
  if (cudaError_t e = forbidden_during_capture("cudaFree")) return e;
  drain_all();  // cudaFree synchronises the device
  std::lock_guard lock(streams_mutex());
  return release_device(p) ? cudaSuccess : record_error(cudaErrorInvalidValue);
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  EMU_STICKY();
  std::lock_guard lock(streams_mutex());
  Stream& s = stream_of(stream);
  if (&s == &legacy_stream() && capturing_stream() && capturing_stream()->blocking)
    return forbidden_during_capture("cudaMallocAsync on the legacy stream");
  *p = bytes ? allocate_device(bytes) : nullptr;
  if (bytes && !*p) return record_error(cudaErrorMemoryAllocation);
  MemoryBook& b = book();
  if (s.graph) {  // a graph allocation: the graph's until it is destroyed
    s.graph->owned_memory.emplace_back(*p, bytes);
    b.graph_used += bytes;
    b.graph_high = std::max(b.graph_high, b.graph_used);
  } else {
    b.pool_used += bytes;
    b.pool_high = std::max(b.pool_high, b.pool_used);
  }
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  EMU_STICKY();
  if (!p) return cudaSuccess;
  std::lock_guard lock(streams_mutex());
  Stream& s = stream_of(stream);
  if (s.graph) {
    for (auto& owned : s.graph->owned_memory)
      if (owned.first == p) return cudaSuccess;  // freed with the graph
  }
  return enqueue(stream, "cudaFreeAsync", [p] {
    std::lock_guard lock(streams_mutex());
    const size_t bytes = book().sizes.count(p) ? book().sizes[p] : 0;
    if (!release_device(p))
      throw DeviceFault("cudaFreeAsync of memory that is not allocated (a double free?)");
    book().pool_used -= std::min(book().pool_used, bytes);
  });
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  EMU_STICKY();
  std::lock_guard lock(streams_mutex());
  *p = std::aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096);
  if (!*p) return record_error(cudaErrorMemoryAllocation);
  pinned()[*p] = bytes;
  register_allocation(*p, bytes, MemoryKind::pinned_host);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return cudaHostAlloc(p, bytes, cudaHostAllocDefault);
}
cudaError_t cudaFreeHost(void* p) {
  EMU_STICKY();
  if (!p) return cudaSuccess;
  drain_all();  // as cudaFreeHost, which synchronises
  std::lock_guard lock(streams_mutex());
  if (!pinned().erase(p)) return record_error(cudaErrorInvalidValue);
  unregister_allocation(p);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  return copy_async(dst, src, bytes, nullptr, true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  return copy_async(dst, src, bytes, stream, false);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                              size_t width, size_t height, cudaMemcpyKind, cudaStream_t stream) {
  EMU_STICKY();
  if (width > dst_pitch || width > src_pitch) return record_error(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  const size_t dst_extent = dst_pitch * (height - 1) + width;
  const size_t src_extent = src_pitch * (height - 1) + width;
  if ((in_device_arena(dst) && !is_device(dst, dst_extent)) ||
      (in_device_arena(src) && !is_device(src, src_extent)))
    return record_error(cudaErrorInvalidValue);
  const bool host_side = !in_device_arena(dst) || !in_device_arena(src);
  if (host_side && !(is_pinned(dst) || in_device_arena(dst)))
    if (cudaError_t e = forbidden_during_capture("a 2-D copy with pageable host memory")) return e;
  if (cudaError_t e = enqueue(stream, "cudaMemcpy2D", [=] {
        for (size_t row = 0; row < height; ++row)
          std::memmove(static_cast<char*>(dst) + row * dst_pitch,
                       static_cast<const char*>(src) + row * src_pitch, width);
      }))
    return e;
  if (!in_device_arena(dst) && !is_pinned(dst)) drain(stream_of(stream));
  return record_error(sticky_error());
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  EMU_STICKY();
  if (bytes && !is_device(p, bytes)) return record_error(cudaErrorInvalidValue);
  return enqueue(stream, "cudaMemset", [p, value, bytes] { std::memset(p, value, bytes); });
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (cudaError_t e = forbidden_during_capture("cudaMemset")) return e;
  if (cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr)) return e;
  drain(legacy_stream());
  return record_error(sticky_error());
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  *attributes = cudaPointerAttributes{};
  const Allocation* a = find_allocation(p);
  if (!a) {
    attributes->type = cudaMemoryTypeUnregistered;
  } else if (a->kind == MemoryKind::device) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = current_device;
    attributes->devicePointer = const_cast<void*>(p);
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(p);
    attributes->devicePointer = const_cast<void*>(p);
  }
  return cudaSuccess;
}

// ---- the stream-ordered pool and graph memory -------------------------------------------------
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (device < 0 || device >= emulated_device_count()) return record_error(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(&fake_pool_object);
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr attr, void* value) {
  if (attr == cudaMemPoolAttrUsedMemHigh) {
    if (*static_cast<uint64_t*>(value) != 0) return record_error(cudaErrorInvalidValue);
    book().pool_high = book().pool_used;
  }
  return cudaSuccess;  // the release threshold: the emulation keeps nothing cached
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t, cudaMemPoolAttr attr, void* value) {
  uint64_t v = 0;
  switch (attr) {
    case cudaMemPoolAttrUsedMemHigh:
      v = book().pool_high;
      break;
    case cudaMemPoolAttrUsedMemCurrent:
      v = book().pool_used;
      break;
    case cudaMemPoolAttrReservedMemHigh:
      v = book().pool_high;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
      v = book().pool_used;
      break;
    default:
      break;
  }
  *static_cast<uint64_t*>(value) = v;
  return cudaSuccess;
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t) {
  return cudaSuccess;
}
cudaError_t cudaDeviceGetGraphMemAttribute(int, cudaGraphMemAttributeType attr, void* value) {
  uint64_t v = attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh
                   ? book().graph_high
                   : book().graph_used;
  *static_cast<uint64_t*>(value) = v;
  return cudaSuccess;
}
cudaError_t cudaDeviceSetGraphMemAttribute(int, cudaGraphMemAttributeType attr, void* value) {
  if (*static_cast<uint64_t*>(value) != 0) return record_error(cudaErrorInvalidValue);
  if (attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh)
    book().graph_high = book().graph_used;
  return cudaSuccess;
}

// ---- streams --------------------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = create_stream(true);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  *stream = create_stream((flags & cudaStreamNonBlocking) == 0);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream) return record_error(cudaErrorInvalidResourceHandle);
  Stream& s = stream_of(stream);
  if (s.graph) return record_error(cudaErrorStreamCaptureUnsupported);
  drain(s);  // CUDA lets queued work finish; the stream object stays (empty) for bookkeeping
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  EMU_STICKY();
  if (cudaError_t e = forbidden_during_capture("cudaStreamSynchronize")) return e;
  drain(stream_of(stream));
  return record_error(sticky_error());
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  EMU_STICKY();
  if (stream_of(stream).graph) return forbidden_during_capture("cudaStreamQuery");
  drain(stream_of(stream));  // the emulated device finishes whatever is asked about
  return record_error(sticky_error());
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  EMU_STICKY();
  if (!event) return record_error(cudaErrorInvalidResourceHandle);
  return wait_for_event(stream, *reinterpret_cast<Event*>(event));
}
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  EMU_STICKY();
  if (!stream) return record_error(cudaErrorStreamCaptureUnsupported);  // not the legacy stream
  Stream& s = stream_of(stream);
  if (s.graph || capturing_stream()) return record_error(cudaErrorIllegalState);
  begin_capture(s, mode);
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  Stream& s = stream_of(stream);
  if (!s.graph) return record_error(cudaErrorIllegalState);
  cudaError_t status = cudaSuccess;
  std::shared_ptr<Graph> g = end_capture(s, status);
  *graph = g ? reinterpret_cast<cudaGraph_t>(new std::shared_ptr<Graph>(g)) : nullptr;
  return record_error(status);
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  *status = stream_of(stream).graph ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

// ---- events ---------------------------------------------------------------------------------
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new Event{});
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  Event* e = new Event{};
  e->timing = (flags & cudaEventDisableTiming) == 0;
  *event = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<Event*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  EMU_STICKY();
  std::lock_guard lock(streams_mutex());
  Event* e = reinterpret_cast<Event*>(event);
  Stream& s = stream_of(stream);
  e->stream = &s;
  if (s.graph) return cudaSuccess;  // inside a capture: an ordering point of the capture itself
  e->reached = false;
  // The event's position is a piece of work of its own, so that the time it ran is known.
  if (cudaError_t c = enqueue(stream, "cudaEventRecord", [e] {
        e->when = std::chrono::steady_clock::now();
        e->reached = true;
      }))
    return c;
  e->sequence = s.issued;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  EMU_STICKY();
  if (cudaError_t c = forbidden_during_capture("cudaEventSynchronize")) return c;
  Event* e = reinterpret_cast<Event*>(event);
  if (e->stream) drain(*e->stream, e->sequence);
  return record_error(sticky_error());
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  return cudaEventSynchronize(event);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  const Event* a = reinterpret_cast<Event*>(start);
  const Event* b = reinterpret_cast<Event*>(stop);
  if (!a->timing || !b->timing) return record_error(cudaErrorInvalidResourceHandle);
  if (!a->reached || !b->reached || !a->stream || !b->stream)
    return record_error(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}

// ---- graphs ---------------------------------------------------------------------------------
namespace {
std::shared_ptr<Graph>& graph_of(cudaGraph_t g) {
  return *reinterpret_cast<std::shared_ptr<Graph>*>(g);
}
}  // namespace
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long) {
  if (!graph) return record_error(cudaErrorInvalidValue);
  *exec = reinterpret_cast<cudaGraphExec_t>(new GraphExec{graph_of(graph)});
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete &graph_of(graph);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  EMU_STICKY();
  std::shared_ptr<Graph> graph = reinterpret_cast<GraphExec*>(exec)->graph;
  if (stream_of(stream).graph) return record_error(cudaErrorStreamCaptureUnsupported);
  return enqueue(stream, "cudaGraphLaunch", [graph] {
    for (Stream::Work& w : graph->work) w.run();
  });
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  GraphExec* e = reinterpret_cast<GraphExec*>(exec);
  if (e->graph.use_count() == 1) {
    drain_all();  // a replay may still be queued
    std::lock_guard lock(streams_mutex());
    for (auto& [p, bytes] : e->graph->owned_memory) {
      release_device(p);
      book().graph_used -= std::min(book().graph_used, bytes);
    }
    e->graph->owned_memory.clear();
  }
  delete e;
  return cudaSuccess;
}
