// DB_HD marks the row and token math that CPU loops and CUDA kernels share: compiled for both
// host and device by nvcc, a plain inline function for the C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define DB_HD __host__ __device__ inline
#else
#define DB_HD inline
#endif
