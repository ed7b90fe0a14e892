// Where `plan` takes a CPU run's throughput from: the suite's `[estimate] cpu_gflops_per_rank`
// when it sets one, else this machine's `depthbench bench` measurement nearest in FLOPs per
// token (sweep/cpu_throughput.hpp), else the stated default; it says which it used.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "sweep/cpu_throughput.hpp"
#include "sweep/suite.hpp"

namespace db::app {

class PlanThroughput {
 public:
  explicit PlanThroughput(const sweep::Suite& suite);
  // GFLOP/s of one rank for a run of this many FLOPs per token; remembers the source.
  double gflops_per_rank(const ModelConfig& model, double flops_per_token);
  // One line per source used, e.g. "CPU throughput: 41.2 GFLOP/s per rank for 30 run(s),
  // measured by `depthbench bench` on this machine (pre_ln L=4 ...)".
  void print_sources() const;

 private:
  std::optional<double> suite_value_;
  sweep::ThroughputCache cache_;
  std::string cache_path_, machine_;
  std::string how_to_measure_;  // the bench command line for each of the suite's shapes
  struct Use {
    double gflops = 0;
    int runs = 0;
  };
  std::map<std::string, Use> used_;  // source text → its figure and how many runs used it
};

}  // namespace db::app
