// What plan and sweep say about a run before training it: Block AttnRes with blocks of one
// sublayer is named as Full AttnRes, and the disk estimate follows the parameter count.
#define BOOST_TEST_MODULE run notes
#include "sweep/run_notes.hpp"

#include <boost/test/included/unit_test.hpp>
#include <string>

#include "model/model.hpp"

using namespace db;

namespace {
ModelConfig block_attnres(int n_layer) {
  ModelConfig m;
  m.arch = "attnres_block";
  m.n_layer = n_layer;
  m.d_model = 64;
  m.n_head = 4;
  return m;
}
}  // namespace

BOOST_AUTO_TEST_CASE(block_attnres_with_one_sublayer_blocks_is_named_full_attnres) {
  // 8 blocks by default: S = ceil(2L / 8) = 1 up to L = 4.
  for (int L : {1, 2, 3, 4}) {
    const std::string note = sweep::design_note(block_attnres(L));
    BOOST_TEST(note.find("is Full AttnRes") != std::string::npos, "L = " << L);
  }
  BOOST_TEST(sweep::design_note(block_attnres(5)).empty());  // S = 2
  ModelConfig fewer_blocks = block_attnres(2);
  fewer_blocks.design_options["attnres_blocks"] = "2";  // S = 2
  BOOST_TEST(sweep::design_note(fewer_blocks).empty());
  ModelConfig explicit_one = block_attnres(16);
  explicit_one.design_options["attnres_block_size"] = "1";
  BOOST_TEST(!sweep::design_note(explicit_one).empty());
  ModelConfig full = block_attnres(2);
  full.arch = "attnres_full";
  BOOST_TEST(sweep::design_note(full).empty());
  ModelConfig invalid = block_attnres(2);
  invalid.design_options["attnres_blocks"] = "0";  // the run reports it; no note, no throw
  BOOST_TEST(sweep::design_note(invalid).empty());
}

BOOST_AUTO_TEST_CASE(disk_estimate_is_four_bytes_per_parameter_per_weight_file) {
  RunConfig config;
  config.model = block_attnres(2);
  config.model.arch = "pre_ln";
  config.model.vocab_size = 128256;
  config.model.d_model = 128;
  const ParameterCounts counts = count_parameters(config.model);
  sweep::DiskEstimate disk = sweep::estimate_disk(config, counts);
  BOOST_TEST(disk.weights == 4.0 * double(counts.total));
  BOOST_TEST(disk.init_weights == 0.0);  // train's default
  BOOST_TEST(disk.checkpoint == 3 * disk.weights);
  // A 128K vocabulary makes even a two-block model's weight file over 130 MB.
  BOOST_TEST(disk.weights > 130e6);
  config.save_initial_weights = true;  // what a sweep does
  disk = sweep::estimate_disk(config, counts);
  BOOST_TEST(disk.kept() == disk.weights + disk.init_weights + disk.run_file);
  BOOST_TEST(disk.init_weights == disk.weights);
  BOOST_TEST(disk.run_file < 1e6);
  BOOST_TEST(sweep::format_bytes(132.4e6) == "132 MB");
  BOOST_TEST(sweep::format_bytes(1.53e9) == "1.5 GB");
  BOOST_TEST(sweep::format_bytes(64e3) == "64 KB");
}
