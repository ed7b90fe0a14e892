// The window order is a permutation per epoch, fixed by the seed, reshuffled between epochs,
// and resumable from any saved position.
#define BOOST_TEST_MODULE window_order
#define BOOST_TEST_DYN_LINK
#include "data/window_order.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <numeric>

#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::require_error;

namespace {

bool is_permutation_of_all_windows(const std::vector<int64_t>& order, int64_t n) {
  if (static_cast<int64_t>(order.size()) != n) return false;
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (int64_t w : order) {
    if (w < 0 || w >= n || seen[w]) return false;
    seen[w] = 1;
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_epoch_visits_every_window_exactly_once) {
  WindowOrder order(1000, 42);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<int64_t> visited;
    for (int64_t p = epoch * 1000; p < (epoch + 1) * 1000; ++p)
      visited.push_back(order.window_at(p));
    BOOST_TEST(is_permutation_of_all_windows(visited, 1000), "epoch " << epoch);
  }
}

BOOST_AUTO_TEST_CASE(same_seed_gives_the_same_order_and_another_seed_does_not) {
  WindowOrder a(500, 7), b(500, 7), c(500, 8);
  const std::vector<int64_t> first = a.epoch_permutation(0);
  BOOST_TEST(first == b.epoch_permutation(0), boost::test_tools::per_element());
  BOOST_TEST((first != c.epoch_permutation(0)));
  std::vector<int64_t> identity(500);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  BOOST_TEST((first != identity));  // it is actually shuffled
}

BOOST_AUTO_TEST_CASE(epochs_are_reshuffled_differently) {
  WindowOrder order(500, 7);
  const std::vector<int64_t> epoch0 = order.epoch_permutation(0);
  const std::vector<int64_t> epoch1 = order.epoch_permutation(1);
  const std::vector<int64_t> epoch2 = order.epoch_permutation(2);
  BOOST_TEST((epoch0 != epoch1));
  BOOST_TEST((epoch1 != epoch2));
  BOOST_TEST((epoch0 == order.epoch_permutation(0)));  // going back regenerates the same epoch
}

BOOST_AUTO_TEST_CASE(resuming_from_a_saved_position_continues_the_same_sequence) {
  WindowOrder uninterrupted(37, 2024);
  std::vector<int64_t> full;
  for (int64_t p = 0; p < 37 * 3; ++p) full.push_back(uninterrupted.window_at(p));
  // A trainer that saved position 50 (epoch 1) restarts with a fresh object.
  WindowOrder resumed(37, 2024);
  for (int64_t p = 50; p < 37 * 3; ++p) BOOST_REQUIRE_EQUAL(resumed.window_at(p), full[p]);
  BOOST_TEST(full[50] == uninterrupted.epoch_permutation(1)[50 - 37]);
}

BOOST_AUTO_TEST_CASE(millions_of_windows_are_shuffled_as_a_valid_permutation) {
  const int64_t n = 3'000'000;
  WindowOrder order(n, 1);
  BOOST_TEST(is_permutation_of_all_windows(order.epoch_permutation(5), n));
  BOOST_TEST(order.window_at(5 * n + 17) == order.epoch_permutation(5)[17]);
}

BOOST_AUTO_TEST_CASE(single_window_and_invalid_arguments) {
  WindowOrder one(1, 3);
  BOOST_TEST(one.window_at(0) == 0);
  BOOST_TEST(one.window_at(99) == 0);
  require_error([] { WindowOrder(0, 1); }, {"0 windows"});
  require_error([&] { one.window_at(-1); }, {"negative position"});
}
