#include "ops/backend.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "core/error.hpp"
#include "ops/timed_ops.hpp"

namespace db {

// Defined in the file CMake generates from DEPTHBENCH_BACKENDS (src/CMakeLists.txt).
std::vector<Backend*> backends_in_build_order();

const std::vector<Backend*>& registered_backends() {
  static const std::vector<Backend*> backends = backends_in_build_order();
  return backends;
}

std::string backend_names() {
  std::string names;
  for (const Backend* b : registered_backends())
    names += (names.empty() ? "" : ", ") + std::string(b->name());
  return names;
}

std::string backend_choices() {
  std::string choices = "auto";
  for (const Backend* b : registered_backends()) choices += std::string(" | ") + b->name();
  return choices;
}

Backend& find_backend(const std::string& name) {
  for (Backend* b : registered_backends())
    if (name == b->name()) return *b;
  throw Error("unknown backend '" + name + "' (valid: auto, " + backend_names() + ")");
}

Backend& backend_of(MemorySpace space) {
  for (Backend* b : registered_backends())
    if (b->space() == space) return *b;
  throw Error(std::string("no registered backend owns the memory space '") + space.name() + "'");
}

namespace {
// Every rank chooses a backend; one line says so: the job's rank 0 (start_backends), or a
// process that never started MPI (help, single-process tools).
bool announces_choices = true;
}  // namespace

Backend& choose_backend(const std::string& requested) {
  if (requested != "auto") {
    Backend& b = find_backend(requested);
    if (!b.available())
      throw Error("--backend " + requested + ": " + b.unavailable_reason() +
                  " (check the build and the visible devices)");
    return b;
  }
  const auto& all = registered_backends();
  Backend* most_preferred = *std::max_element(all.begin(), all.end(), [](Backend* a, Backend* b) {
    return a->auto_preference() < b->auto_preference();
  });
  Backend* best = nullptr;
  for (Backend* b : all)
    if (b->available() && (!best || b->auto_preference() > best->auto_preference())) best = b;
  DB_REQUIRE(best, "no registered backend can run here");
  if (best != most_preferred && announces_choices)
    std::printf("backend: %s: %s, using the %s backend\n", most_preferred->name(),
                most_preferred->unavailable_reason().c_str(), best->name());
  return *best;
}

void prepare_backends(char** argv) {
  for (Backend* b : registered_backends()) b->prepare_process(argv);
}

void start_backends(const Communicator& job) {
  announces_choices = job.rank() == 0;
  for (Backend* b : registered_backends()) b->start(job);
}

void Backend::no_double() const {
  throw Error(std::string("the ") + name() +
              " backend computes in float only (double is for the CPU gradient checks)");
}

std::unique_ptr<Ops<double>> Backend::make_double_ops() const {
  no_double();
}
void Backend::adamw_update(double*, const double*, float*, float*, const uint8_t*, int64_t,
                           const AdamWUpdate&, bfloat16*) const {
  no_double();
}
double Backend::sum_of_squares(const double*, int64_t) const {
  no_double();
}

std::unique_ptr<SectionTimer> Backend::make_section_timer() const {
  return make_host_section_timer();
}

template <class T>
std::unique_ptr<Ops<T>> make_ops(const Backend& backend, const OpsOptions& options) {
  std::unique_ptr<Ops<T>> ops;
  if constexpr (std::is_same_v<T, float>)
    ops = backend.make_float_ops(options);
  else
    ops = backend.make_double_ops();
  if (SectionTimer* timer = backend.section_timer()) return make_timed_ops(std::move(ops), *timer);
  return ops;
}

template std::unique_ptr<Ops<float>> make_ops<float>(const Backend&, const OpsOptions&);
template std::unique_ptr<Ops<double>> make_ops<double>(const Backend&, const OpsOptions&);

}  // namespace db
