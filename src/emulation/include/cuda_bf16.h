// <cuda_bf16.h> on the emulated device: the toolkit's header (its host-side bf16 conversions
// are exact), after the emulated <cuda_runtime.h>.
#pragma once
#include <cuda_runtime.h>
#include_next <cuda_bf16.h>
