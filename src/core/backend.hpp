// The compute backend of a run: the CPU ops (src/ops/cpu) or the CUDA ops (src/ops/cuda).
// Safe to call in every build: without the CUDA backend compiled in, "auto" is the CPU.
#pragma once
#include <string>

namespace db {

enum class Backend { cpu, cuda };

// requested: "auto" (CUDA when a GPU is visible, else the CPU with one line on stdout saying
// so), "cpu" or "cuda" (a db::Error when CUDA was not compiled in or no GPU is visible).
Backend choose_backend(const std::string& requested);
// True when this binary carries the CUDA backend (DEPTHBENCH_HAVE_CUDA).
bool cuda_compiled_in();
const char* backend_name(Backend backend);

}  // namespace db
