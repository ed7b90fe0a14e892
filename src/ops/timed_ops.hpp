// Ops that time every call of another Ops object in a SectionTimer, one section per op name
// ("attention_backward", "linear_forward", ...): the per-kernel breakdown of
// `depthbench bench --breakdown`. The model code does not know: make_ops (ops/backend.hpp)
// returns these only while a timer is attached to the backend, so training pays nothing.
#pragma once
#include <memory>

#include "ops/ops.hpp"
#include "ops/section_timer.hpp"

namespace db {

// `timer` must outlive the returned ops.
template <class T>
std::unique_ptr<Ops<T>> make_timed_ops(std::unique_ptr<Ops<T>> inner, SectionTimer& timer);

}  // namespace db
