// DB_HD marks the row and token math that CPU loops and CUDA kernels share: compiled for both
// host and device by nvcc, a plain inline function for the C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define DB_HD __host__ __device__ inline
#else
#define DB_HD inline
#endif

// Unrolls a loop of constant length on the GPU, so that the small arrays it indexes stay in a
// thread's registers (indexed by constants) instead of local memory. The host compiler decides
// for itself.
#if defined(__CUDA_ARCH__)
#define DB_DEVICE_UNROLL _Pragma("unroll")
#else
#define DB_DEVICE_UNROLL
#endif
