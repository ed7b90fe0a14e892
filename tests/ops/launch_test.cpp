// The generic launchers on the host (ops/launch.hpp): every index is visited once (rows shared
// by lanes: every column once), the row sums reach every target segment, and their bits do not
// depend on the thread count (fixed chunks summed in order), the property the training determinism
// relies on.
#define BOOST_TEST_MODULE launch
#define BOOST_TEST_DYN_LINK
#include "ops/launch.hpp"

#include <omp.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

using namespace db;

namespace {

struct CountVisits {
  int* visits;
  DB_HD void operator()(int64_t i) const { visits[i] += 1; }
};

struct MarkRowElement {
  int* seen;
  int width;
  DB_HD void operator()(int64_t r, int e) const { seen[r * width + e] += int(r) * 100 + e; }
};

// Row r contributes sin(r·(c+1)) to column c and writes its own output.
struct RowContributions {
  double* own;
  int width;
  DB_HD void operator()(int64_t r, double* sums) const {
    own[r] = double(r);
    for (int c = 0; c < width; ++c) sums[c] += std::sin(double(r) * (c + 1));
  }
};

// RowContributions written for shared rows: each lane takes its own columns.
struct LaneRowContributions {
  double* own;
  int width;
  template <class Lanes>
  DB_HD void operator()(int64_t r, double* sums, const Lanes& lanes) const {
    if (lanes.leader()) own[r] = double(r);
    for (int c = lanes.first(); c < width; c += lanes.step())
      sums[c] += std::sin(double(r) * (c + 1));
  }
};

// Marks row r's columns; the row's lane sum of ones must be the width.
struct MarkRowLanes {
  int* seen;
  int width;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    int part = 0;
    for (int c = lanes.first(); c < width; c += lanes.step()) {
      seen[r * width + c] += 1;
      part += 1;
    }
    if (lanes.leader() && lanes.sum(part) != width) seen[r * width] = -1000;
  }
};

template <bool kLanes, class F>
std::vector<float> sums_of(int64_t rows, const F& f) {
  std::vector<float> a(3, 1.f), b(2, -1.f);
  SumTargets<float> targets;
  targets.add(a.data(), 3).add(b.data(), 2);
  if constexpr (kLanes)
    for_each_row_sum_lanes(MemorySpace::host, rows, targets, f);
  else
    for_each_row_sum(MemorySpace::host, rows, targets, f);
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<float> row_sums_with_threads(int threads, int64_t rows) {
  omp_set_num_threads(threads);
  std::vector<float> a(3, 1.f), b(2, -1.f);
  std::vector<double> own(rows);
  SumTargets<float> targets;
  targets.add(a.data(), 3).add(b.data(), 2);
  for_each_row_sum(MemorySpace::host, rows, targets, RowContributions{own.data(), 5});
  for (int64_t r = 0; r < rows; ++r) BOOST_TEST(own[r] == double(r));
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

BOOST_AUTO_TEST_CASE(for_each_index_visits_every_index_once) {
  std::vector<int> visits(1000, 0);
  for_each_index(MemorySpace::host, 1000, CountVisits{visits.data()});
  for (int v : visits) BOOST_TEST(v == 1);
}

BOOST_AUTO_TEST_CASE(for_each_row_element_visits_every_row_and_value_once) {
  const int rows = 7, width = 13;
  std::vector<int> seen(rows * width, 0);
  for_each_row_element(MemorySpace::host, rows, width, MarkRowElement{seen.data(), width});
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < width; ++e) BOOST_TEST(seen[r * width + e] == r * 100 + e);
}

BOOST_AUTO_TEST_CASE(row_sums_are_added_to_each_target_and_do_not_depend_on_threads) {
  const int64_t rows = 1000;  // 16 chunks of 64 rows
  const std::vector<float> one = row_sums_with_threads(1, rows);
  const std::vector<float> four = row_sums_with_threads(4, rows);
  BOOST_TEST(one == four, boost::test_tools::per_element());
  for (int c = 0; c < 5; ++c) {
    double expected = c < 3 ? 1.0 : -1.0;
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) sum += std::sin(double(r) * (c + 1));
    expected += sum;
    BOOST_TEST(std::fabs(one[c] - expected) < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(rows_shared_by_lanes_visit_every_row_and_column_once) {
  const int rows = 9, width = 37;
  std::vector<int> seen(rows * width, 0);
  for_each_row_lanes(MemorySpace::host, rows, MarkRowLanes{seen.data(), width});
  for (int v : seen) BOOST_TEST(v == 1);
}

// On the host a row shared by lanes is one lane: the same sums, bit for bit, as the plain
// per-row functor (the depth softmax relies on it: its CPU results did not change).
BOOST_AUTO_TEST_CASE(row_sums_by_lanes_equal_the_plain_row_sums_on_the_host) {
  const int64_t rows = 1000;
  std::vector<double> own(rows), own_lanes(rows);
  const std::vector<float> plain = sums_of<false>(rows, RowContributions{own.data(), 5});
  const std::vector<float> lanes = sums_of<true>(rows, LaneRowContributions{own_lanes.data(), 5});
  BOOST_TEST(plain == lanes, boost::test_tools::per_element());
  BOOST_TEST(own == own_lanes, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pointer_lists_reject_more_pointers_than_their_capacity) {
  std::vector<const float*> many(5, nullptr);
  BOOST_CHECK_THROW((PointerList<const float*, 4>(many)), Error);
  BOOST_TEST((PointerList<const float*, 8>(many).size == 5));
}
