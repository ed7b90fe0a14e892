// cuDNN 9's backend API on the host (emulation only). cudnn_backend.cpp defines, with the exact
// signatures of the real cudnn_graph.h, the entry points cudnn_library.hpp's table holds:
//   cudnnGetVersion, cudnnGetErrorString, cudnnGetLastErrorString, cudnnCreate, cudnnDestroy,
//   cudnnSetStream, cudnnBackendCreateDescriptor, cudnnBackendDestroyDescriptor,
//   cudnnBackendSetAttribute, cudnnBackendGetAttribute, cudnnBackendFinalize,
//   cudnnBackendExecute
// so an emulated build fills the table with &::cudnnGetVersion and so on instead of dlopen.
// Descriptors keep their attributes; Finalize refuses what cuDNN would (missing attributes,
// inconsistent dims and strides, an operation graph whose tensors do not connect) and, where the
// real libcudnn can be loaded, replays tensors, operations and operation graphs into it and
// refuses what it refuses (it finalises those without a device); the
// heuristics offer one engine configuration; Execute interprets the operation graph on the host
// (matmul, pointwise, reduction, reshape over strided 1–8-D tensors, fp32 and bf16), enqueued on
// the handle's stream.
#pragma once

namespace db::emulation {

// What the table's `path` says under emulation.
inline constexpr const char* kEmulatedCudnnPath = "emulated: host interpreter of the graph";

// The real cuDNN that also validates every tensor, operation and operation graph ("cuDNN 9.19.0
// (DIR)"), or nullptr when none could be loaded (or DEPTHBENCH_CUDNN_SHADOW=0).
const char* cudnn_shadow_library();

}  // namespace db::emulation
