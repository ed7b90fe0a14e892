// The ops of a backend: the CPU ops in float or double, the CUDA ops in float.
#pragma once
#include <memory>

#include "core/backend.hpp"
#include "ops/ops.hpp"

namespace db {

// Throws db::Error for a combination this build cannot run (CUDA without the CUDA backend, or
// CUDA in double). The CPU ignores `precision` (it computes in T).
template <class T>
std::unique_ptr<Ops<T>> make_ops(Backend backend, Precision precision = Precision::fp32);

}  // namespace db
