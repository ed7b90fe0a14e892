#ifdef DEPTHBENCH_HAVE_CUDNN
#include "ops/cuda/cudnn_library.hpp"

#include <dlfcn.h>

#include <mutex>

#if defined(DEPTHBENCH_CUDA_EMULATION)
#include "emulation/libraries/cudnn_backend.hpp"
#endif

namespace db::cuda {
namespace {

template <class F>
bool load(void* handle, const char* name, F& f, std::string& why) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) why = std::string("symbol ") + name + " missing";
  return f != nullptr;
}

// The backend API lives in libcudnn_graph; libcudnn is the umbrella that forwards to it. The
// loader's search path decides which file (doc/cuda.md: LD_LIBRARY_PATH, the NVIDIA wheels).
CudnnLibrary* open_library(std::string& why) {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  // The emulated device's cuDNN: the same entry points, defined in this process.
  (void)why;
  return new CudnnLibrary{&::cudnnGetVersion,
                          &::cudnnGetErrorString,
                          &::cudnnGetLastErrorString,
                          &::cudnnCreate,
                          &::cudnnDestroy,
                          &::cudnnSetStream,
                          &::cudnnBackendCreateDescriptor,
                          &::cudnnBackendDestroyDescriptor,
                          &::cudnnBackendSetAttribute,
                          &::cudnnBackendGetAttribute,
                          &::cudnnBackendFinalize,
                          &::cudnnBackendExecute,
                          emulation::kEmulatedCudnnPath};
#endif
  void* handle = nullptr;
  std::string tried;
  for (const char* name : {"libcudnn.so.9", "libcudnn_graph.so.9"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* error = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (error ? error : name);
  }
  if (!handle) {
    why = "no cuDNN 9 library found (" + tried + ")";
    return nullptr;
  }
  auto* lib = new CudnnLibrary{};  // lives as long as the process, like the library
  bool ok = load(handle, "cudnnGetVersion", lib->GetVersion, why) &&
            load(handle, "cudnnGetErrorString", lib->GetErrorString, why) &&
            load(handle, "cudnnGetLastErrorString", lib->GetLastErrorString, why) &&
            load(handle, "cudnnCreate", lib->Create, why) &&
            load(handle, "cudnnDestroy", lib->Destroy, why) &&
            load(handle, "cudnnSetStream", lib->SetStream, why) &&
            load(handle, "cudnnBackendCreateDescriptor", lib->BackendCreateDescriptor, why) &&
            load(handle, "cudnnBackendDestroyDescriptor", lib->BackendDestroyDescriptor, why) &&
            load(handle, "cudnnBackendSetAttribute", lib->BackendSetAttribute, why) &&
            load(handle, "cudnnBackendGetAttribute", lib->BackendGetAttribute, why) &&
            load(handle, "cudnnBackendFinalize", lib->BackendFinalize, why) &&
            load(handle, "cudnnBackendExecute", lib->BackendExecute, why);
  if (ok && lib->GetVersion() / 10000 != 9) {
    why = "cuDNN " + std::to_string(lib->GetVersion()) + " found, 9.x needed";
    ok = false;
  }
  char path[4096] = "";
  if (ok && dlinfo(handle, RTLD_DI_ORIGIN, path) == 0) lib->path = path;
  if (!ok) {
    delete lib;
    dlclose(handle);
    return nullptr;
  }
  return lib;
}

}  // namespace

const CudnnLibrary* cudnn_library(std::string* why) {
  static std::once_flag once;
  static CudnnLibrary* lib = nullptr;
  static std::string reason;
  std::call_once(once, [] { lib = open_library(reason); });
  if (!lib && why) *why = reason;
  return lib;
}

std::string cudnn_error_message(const CudnnLibrary& lib, cudnnStatus_t status, const char* call) {
  char last[512] = "";
  lib.GetLastErrorString(last, sizeof last);
  std::string message = std::string("cuDNN: ") + lib.GetErrorString(status);
  if (last[0]) message += std::string(" (") + last + ")";
  return message + " in " + call;
}

}  // namespace db::cuda
#endif  // DEPTHBENCH_HAVE_CUDNN
