// DB_DEVICE_UNROLL before a loop of constant length in DB_HD code (core/host_device.hpp): on the
// GPU the loop is unrolled, so that the small arrays it indexes stay in a thread's registers
// (indexed by constants) instead of local memory; the host compiler decides for itself.
#pragma once

#if defined(__CUDA_ARCH__)
#define DB_DEVICE_UNROLL _Pragma("unroll")
#else
#define DB_DEVICE_UNROLL
#endif
