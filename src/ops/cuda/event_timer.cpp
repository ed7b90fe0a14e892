#include "ops/cuda/event_timer.hpp"

#include <cuda_runtime.h>

#include <vector>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {
namespace {

// Every op of the backend runs on the legacy default stream (cuda_ops.cpp).
constexpr cudaStream_t kStream = nullptr;

class EventSectionTimer final : public SectionTimer {
 public:
  ~EventSectionTimer() override {
    for (Record& r : records_) {
      cudaEventDestroy(r.start);  // never throws: a destructor
      cudaEventDestroy(r.stop);
    }
  }
  void begin(const char* section) override {
    CUDA_REQUIRE(!open_, std::string("section timer: '") + section +
                             "' begins inside another section (sections do not nest)");
    if (used_ == records_.size()) {
      Record r{};
      CUDA_CHECK(cudaEventCreate(&r.start));
      CUDA_CHECK(cudaEventCreate(&r.stop));
      records_.push_back(r);
    }
    Record& r = records_[used_];
    r.section = section;
    CUDA_CHECK(cudaEventRecord(r.start, kStream));
    open_ = true;
  }
  void end() override {
    CUDA_REQUIRE(open_, "section timer: end() without begin()");
    CUDA_CHECK(cudaEventRecord(records_[used_].stop, kStream));
    ++used_;
    open_ = false;
  }
  std::vector<Total> totals() override {
    std::vector<Total> totals;
    if (used_ == 0) return totals;
    CUDA_CHECK(cudaEventSynchronize(records_[used_ - 1].stop));
    for (size_t i = 0; i < used_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, records_[i].start, records_[i].stop));
      add_to_totals(totals, records_[i].section, ms);
    }
    return totals;
  }
  void clear() override { used_ = 0; }

 private:
  struct Record {
    const char* section;
    cudaEvent_t start, stop;
  };
  std::vector<Record> records_;  // [0, used_) recorded since the last clear()
  size_t used_ = 0;
  bool open_ = false;
};

}  // namespace

std::unique_ptr<SectionTimer> make_event_section_timer() {
  return std::make_unique<EventSectionTimer>();
}

}  // namespace db::cuda
