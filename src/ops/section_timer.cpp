#include "ops/section_timer.hpp"

#include <chrono>

#include "core/error.hpp"

namespace db {
namespace {

class HostSectionTimer final : public SectionTimer {
 public:
  void begin(const char* section) override {
    DB_REQUIRE(!open_, std::string("section timer: '") + section + "' begins inside '" + open_ +
                           "' (sections do not nest)");
    open_ = section;
    start_ = Clock::now();
  }
  void end() override {
    DB_REQUIRE(open_, "section timer: end() without begin()");
    add_to_totals(totals_, open_,
                  std::chrono::duration<double, std::milli>(Clock::now() - start_).count());
    open_ = nullptr;
  }
  std::vector<Total> totals() override { return totals_; }
  void clear() override { totals_.clear(); }

 private:
  using Clock = std::chrono::steady_clock;
  const char* open_ = nullptr;
  Clock::time_point start_;
  std::vector<Total> totals_;
};

}  // namespace

std::unique_ptr<SectionTimer> make_host_section_timer() {
  return std::make_unique<HostSectionTimer>();
}

}  // namespace db
