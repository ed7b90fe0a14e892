// DB_HD marks the row and token math that CPU loops and CUDA kernels share: compiled for both
// host and device by nvcc, a plain inline function for the C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define DB_HD __host__ __device__ inline
#else
#define DB_HD inline
#endif

// DB_KERNELS: whether this translation unit compiles CUDA kernels — nvcc's, or the host
// compiler's against the emulated device (DEPTHBENCH_CUDA_EMULATION, doc/cuda.md "The emulated
// device"), which runs the same kernel sources on the host.
#if defined(__CUDACC__) || defined(DEPTHBENCH_CUDA_EMULATION)
#define DB_KERNELS 1
#else
#define DB_KERNELS 0
#endif
