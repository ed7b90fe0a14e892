// Which design kernels a step spends its time in (`depthbench bench --breakdown`). While a
// LaunchTimerScope is alive, the generic launchers (ops/launch.hpp) time each call in its
// SectionTimer, one section per functor type ("stream_kernels::MixGrads"), beside the sections
// of the ops (ops/timed_ops.hpp). Launchers are leaves (no op and no other launcher runs inside
// one), so the sections do not nest. Without a scope a launch costs one load and a branch.
#pragma once
#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <typeinfo>

#include "ops/section_timer.hpp"

namespace db {

namespace detail {

// The timer of the live scope, or null. One for the program (an inline function's static).
inline SectionTimer*& launch_timer_slot() {
  static SectionTimer* timer = nullptr;
  return timer;
}

// Drops the template arguments at the end of a type's name: "A<B<C>>" → "A".
inline std::string without_last_template_arguments(std::string name) {
  int depth = 0;
  for (size_t i = name.size(); i-- > 0 && name.back() == '>';) {
    depth += name[i] == '>' ? 1 : name[i] == '<' ? -1 : 0;
    if (depth == 0) return name.substr(0, i);
  }
  return name;
}

// A functor type's readable name: "db::stream_kernels::MixGrads<float>" → "stream_kernels::
// MixGrads" (the namespace db, anonymous namespaces and the last template arguments dropped;
// an enclosing template's stay: "Outer<float>::Inner").
inline std::string launch_section_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  name = without_last_template_arguments(name);
  if (name.rfind("db::", 0) == 0) name.erase(0, 4);
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at; (at = name.find(anonymous)) != std::string::npos;)
    name.erase(at, anonymous.size());
  return name;
}

}  // namespace detail

// Times every launch in `timer` until the scope ends (whether the timer records is still its
// own: SectionTimer::set_recording).
class LaunchTimerScope {
 public:
  explicit LaunchTimerScope(SectionTimer& timer) { detail::launch_timer_slot() = &timer; }
  ~LaunchTimerScope() { detail::launch_timer_slot() = nullptr; }
  LaunchTimerScope(const LaunchTimerScope&) = delete;
  LaunchTimerScope& operator=(const LaunchTimerScope&) = delete;
};

// Runs launch(), timed in F's section while a scope is alive.
template <class F, class Launch>
void timed_launch(const Launch& launch) {
  SectionTimer* timer = detail::launch_timer_slot();
  if (!timer) return launch();
  static const std::string section = detail::launch_section_name(typeid(F).name());
  time_section(*timer, section.c_str(), launch);
}

}  // namespace db
