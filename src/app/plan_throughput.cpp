#include "app/plan_throughput.hpp"

#include <cstdio>

#include "sweep/sweep_plan.hpp"

namespace db::app {

PlanThroughput::PlanThroughput(const sweep::Suite& suite)
    : suite_value_(suite.estimate.cpu_gflops_per_rank),
      cache_path_(sweep::throughput_cache_path()),
      machine_(sweep::this_machine()) {
  if (!suite_value_) cache_ = sweep::read_throughput_cache(cache_path_);
  std::string depths;
  for (const sweep::Shape& shape : sweep::suite_shapes(suite)) {
    if (!depths.empty()) depths += ' ';
    depths += std::to_string(shape.n_layer());
  }
  how_to_measure_ = "for L in " + depths + "; do mpirun -np N depthbench bench --suite " +
                    suite.source + " --depth $L; done";
}

double PlanThroughput::gflops_per_rank(const ModelConfig& model, double flops_per_token) {
  double gflops = sweep::SuiteEstimate::kDefaultCpuGflopsPerRank;
  std::string source;
  if (suite_value_) {
    gflops = *suite_value_;
    source = "the suite's [estimate] cpu_gflops_per_rank";
  } else if (const auto m = sweep::nearest_measurement(cache_, machine_, model, flops_per_token)) {
    gflops = m->gflops_per_rank();
    source = "measured by `depthbench bench` on this machine, training steps only (" +
             m->describe() + ")";
  } else {
    source =
        "the default (a 2-core VM's demo sweep, validation and checkpoints included); no "
        "measurement of this machine in " +
        cache_path_ + "; measure it on the ranks the sweep will use: `" + how_to_measure_ + "`";
  }
  Use& use = used_[source];
  use.gflops = gflops;
  ++use.runs;
  return gflops;
}

void PlanThroughput::print_sources() const {
  if (!cache_.problem.empty())
    std::printf("throughput cache unreadable, not used: %s\n", cache_.problem.c_str());
  for (const auto& [source, use] : used_)
    std::printf("CPU throughput: %.1f GFLOP/s per rank for %d run(s), %s\n", use.gflops, use.runs,
                source.c_str());
}

}  // namespace db::app
