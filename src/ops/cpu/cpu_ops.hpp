// The CPU backend of the ops interface (ops/ops.hpp) in float (training) and double (gradient
// checks): host memory, OpenBLAS products, OpenMP loops whose results do not depend on the
// thread count.
#pragma once
#include <memory>

#include "ops/ops.hpp"

namespace db {

template <class T>
std::unique_ptr<Ops<T>> make_cpu_ops();

}  // namespace db
