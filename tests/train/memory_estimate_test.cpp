// The memory estimate of `plan` and of a run's start takes each design's state from its
// registry entry: no design name appears in memory_estimate.cpp, and a design registered later
// is estimated with its own state.
#define BOOST_TEST_MODULE memory estimate
#define BOOST_TEST_DYN_LINK
#include "train/memory_estimate.hpp"

#include <boost/test/unit_test.hpp>
#include <string>

#include "model/model.hpp"
#include "model/residual/registry.hpp"

using namespace db;

namespace {

RunConfig config_of(const std::string& arch) {
  RunConfig c;
  c.model.arch = arch;
  c.model.n_layer = 3;
  c.model.d_model = 64;
  c.model.n_head = 4;
  c.model.vocab_size = 257;
  c.recipe.micro_batch_sequences = 2;
  c.recipe.seq_len = 16;
  return c;
}

// Activation bytes beyond the backbone's: 4 bytes per value, per token and block.
double state_bytes(const RunConfig& c) {
  RunConfig plain = c;
  plain.model.arch = "pre_ln";
  return estimate_memory(c).activations_bytes - estimate_memory(plain).activations_bytes;
}

double tokens(const RunConfig& c) {
  return double(c.recipe.micro_batch_sequences) * c.recipe.seq_len;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_design_is_estimated_with_its_registry_entrys_state) {
  for (const DesignInfo& d : all_designs()) {
    const RunConfig c = config_of(d.name);
    const double want = 4.0 * tokens(c) * c.model.n_layer * d.state_values_per_token(c.model);
    BOOST_TEST(state_bytes(c) == want, d.name);
  }
}

BOOST_AUTO_TEST_CASE(designs_that_keep_state_declare_a_nonzero_state) {
  // Streams (HC, mHC), sources (AttnRes) and depth pools (MoDA); the single-stream designs
  // keep nothing beyond the backbone's tensors.
  for (const char* arch : {"moda", "hc", "mhc", "attnres_full", "attnres_block"})
    BOOST_TEST(find_design(arch).state_values_per_token(config_of(arch).model) > 0, arch);
  for (const char* arch : {"pre_ln", "sandwich_ln", "lns", "deepnorm", "keel"})
    BOOST_TEST(find_design(arch).state_values_per_token(config_of(arch).model) == 0, arch);
}

BOOST_AUTO_TEST_CASE(the_state_follows_the_design_options) {
  RunConfig c = config_of("hc");
  const double four_streams = state_bytes(c);
  c.model.design_options["hc_streams"] = "8";
  BOOST_TEST(state_bytes(c) == 2 * four_streams);
}

BOOST_AUTO_TEST_CASE(a_design_registered_later_is_estimated_with_its_own_state) {
  DesignInfo d = find_design("pre_ln");
  d.name = "test_stateful_pre_ln";
  d.state_values_per_token_block = [](const ModelConfig& m) { return 3.0 * m.d_model; };
  register_design(d);
  const RunConfig c = config_of(d.name);
  BOOST_TEST(state_bytes(c) == 4.0 * tokens(c) * c.model.n_layer * 3.0 * c.model.d_model);
}

BOOST_AUTO_TEST_CASE(recomputed_blocks_keep_one_blocks_activations_and_every_blocks_input) {
  for (const DesignInfo& d : all_designs()) {
    RunConfig kept = config_of(d.name);
    kept.model.n_layer = 6;
    RunConfig recomputed = kept;
    recomputed.recompute = "blocks";
    const ModelConfig& m = kept.model;
    const double block = 8.0 * m.d_model + 3.0 * m.ff_dim() + d.state_values_per_token(m);
    const double saved = (m.n_layer - 1) * block - m.n_layer * d.recompute_values_per_token(m);
    BOOST_TEST(saved > 0, d.name);
    BOOST_TEST(
        estimate_memory(kept).activations_bytes - estimate_memory(recomputed).activations_bytes ==
            4.0 * tokens(kept) * saved,
        d.name);
  }
}

BOOST_AUTO_TEST_CASE(a_bf16_cuda_run_that_may_use_cudnn_counts_its_attention_workspace) {
  RunConfig c = config_of("pre_ln");
  c.backend = "cuda";
  c.precision = "bf16";
  const double dP = 2.0 * c.recipe.micro_batch_sequences * c.model.n_head * c.recipe.seq_len *
                    c.recipe.seq_len;  // bf16 [B, H, T, T]
  for (const char* path : {"auto", "cudnn"}) {
    c.attention = path;
    const MemoryEstimate e = estimate_memory(c);
    BOOST_TEST(e.attention_workspace_bytes == dP, path);
    BOOST_TEST(e.total() == e.weights_bytes + e.optimizer_bytes + e.activations_bytes + dP);
  }
  for (const char* path : {"flash", "reference"}) {
    c.attention = path;
    BOOST_TEST(estimate_memory(c).attention_workspace_bytes == 0, path);
  }
  c.attention = "auto";
  c.precision = "fp32";  // auto is the fp32 reference kernel
  BOOST_TEST(estimate_memory(c).attention_workspace_bytes == 0);
  c.precision = "bf16";
  c.backend = "cpu";
  BOOST_TEST(estimate_memory(c).attention_workspace_bytes == 0);
}

// train.activation_dtype = bf16 (auto on a bf16 CUDA run): the cores' 4d + 3·ff values take 2
// bytes, plus their rounded inputs (2d), and the parameters one bf16 copy (model/parameters.hpp:
// 2 bytes per parameter with the weights, not a copy per block in the activations, so neither
// the micro-batch nor train.recompute changes it).
BOOST_AUTO_TEST_CASE(bf16_storage_halves_the_cores_activations_and_adds_one_weight_copy) {
  for (const DesignInfo& d : all_designs()) {
    RunConfig fp32 = config_of(d.name);
    fp32.backend = "cuda";
    fp32.precision = "bf16";
    fp32.activation_dtype = "fp32";
    RunConfig bf16 = fp32;
    bf16.activation_dtype = "auto";
    const ModelConfig& m = fp32.model;
    const double core = 4.0 * m.d_model + 3.0 * m.ff_dim();
    const double saved_per_block =
        4.0 * core - 2.0 * (core + 2.0 * m.d_model) + 2.0 * d.stored_values_per_token(m);
    // The head's logits chunk: fp32 with a bf16 gradient beside it, against bf16 in place.
    const double head_saved = (6.0 - 2.0) * tokens(fp32) * m.vocab_size;
    const MemoryEstimate wide = estimate_memory(fp32), narrow = estimate_memory(bf16);
    BOOST_TEST(wide.activations_bytes - narrow.activations_bytes ==
                   tokens(fp32) * m.n_layer * saved_per_block + head_saved,
               d.name);
    BOOST_TEST(narrow.weights_bytes - wide.weights_bytes == 2.0 * double(count_parameters(m).total),
               d.name);
    RunConfig other = bf16;
    other.recompute = "blocks";
    other.recipe.micro_batch_sequences *= 2;
    BOOST_TEST(estimate_memory(other).weights_bytes == narrow.weights_bytes, d.name);
  }
  RunConfig cpu = config_of("pre_ln");
  cpu.precision = "bf16";  // auto stores fp32 on the CPU
  RunConfig cpu_fp32 = cpu;
  cpu_fp32.activation_dtype = "fp32";
  BOOST_TEST(estimate_memory(cpu).activations_bytes == estimate_memory(cpu_fp32).activations_bytes);
}

// The LM head holds one chunk of logits (4 096 rows on a GPU, 256 on the CPU) and their
// gradient: fp32 in place; in a CUDA bf16 run bf16 in place, or with fp32 storage fp32 logits and
// a bf16 gradient beside them, and there also a bf16 copy of W (2·d bytes per vocabulary entry).
// Only the head's bytes grow with the vocabulary.
BOOST_AUTO_TEST_CASE(the_head_counts_its_logits_in_the_type_it_writes) {
  const auto bytes_per_logit = [](const std::string& backend, const std::string& precision,
                                  const std::string& storage) {
    RunConfig c = config_of("pre_ln");
    c.recipe.micro_batch_sequences = 32;
    c.recipe.seq_len = 256;  // 8 192 tokens: chunks of 4 096 rows on a GPU, 256 on the CPU
    c.backend = backend;
    c.precision = precision;
    c.activation_dtype = storage;
    RunConfig wider = c;
    wider.model.vocab_size += 1000;
    const double rows = backend == "cuda" ? 4096.0 : 256.0;
    return (estimate_memory(wider).activations_bytes - estimate_memory(c).activations_bytes) /
           (1000.0 * rows);
  };
  const double narrowed_W = 2.0 * 64 / 4096;  // per logit of the chunk, at d = 64
  BOOST_TEST(bytes_per_logit("cuda", "bf16", "auto") == 2.0 + narrowed_W);
  BOOST_TEST(bytes_per_logit("cuda", "bf16", "fp32") == 6.0 + narrowed_W);
  BOOST_TEST(bytes_per_logit("cuda", "fp32", "auto") == 4.0);
  BOOST_TEST(bytes_per_logit("cpu", "bf16", "bf16") == 4.0);
}

// MoDA keeps its depth pools in the cores' type: 2 bytes per value under bf16 storage, in every
// block's state and, under train.recompute = blocks, in the values every block keeps.
BOOST_AUTO_TEST_CASE(values_a_design_stores_in_the_cores_type_take_its_bytes) {
  for (const DesignInfo& d : all_designs()) {
    const ModelConfig& m = config_of(d.name).model;
    BOOST_TEST(d.stored_values_per_token(m) <= d.state_values_per_token(m), d.name);
    BOOST_TEST(d.stored_values_per_token(m) <= d.recompute_values_per_token(m), d.name);
  }
  const ModelConfig& moda = config_of("moda").model;
  const double pools = find_design("moda").stored_values_per_token(moda);
  BOOST_TEST(pools == 4.0 * moda.kv_heads() * moda.head_dim());
  for (const char* recompute : {"none", "blocks"}) {
    RunConfig fp32 = config_of("moda");
    fp32.backend = "cuda";
    fp32.precision = "bf16";
    fp32.activation_dtype = "fp32";
    fp32.recompute = recompute;
    RunConfig bf16 = fp32;
    bf16.activation_dtype = "bf16";
    RunConfig plain_fp32 = fp32, plain_bf16 = bf16;
    plain_fp32.model.arch = plain_bf16.model.arch = "pre_ln";
    const double design_saved =
        (estimate_memory(fp32).activations_bytes - estimate_memory(bf16).activations_bytes) -
        (estimate_memory(plain_fp32).activations_bytes -
         estimate_memory(plain_bf16).activations_bytes);
    // Every block's pools, and under recompute the one re-run block's state besides.
    const double blocks = moda.n_layer + (std::string(recompute) == "blocks" ? 1 : 0);
    BOOST_TEST(design_saved == tokens(fp32) * blocks * 2.0 * pools, recompute);
  }
}

// train.state_dtype = bf16: AttnRes's sources take 2 bytes (Full: its two sublayer outputs; Block:
// its two partial sums, under recompute the one a block ends with); the other designs refuse it.
BOOST_AUTO_TEST_CASE(sources_stored_in_bf16_take_two_bytes) {
  for (const DesignInfo& d : all_designs()) {
    const ModelConfig& m = config_of(d.name).model;
    for (bool recompute : {false, true}) {
      const double narrow = d.bf16_state_values_per_token(m, recompute);
      BOOST_TEST(
          narrow <= (recompute ? d.recompute_values_per_token(m) : d.state_values_per_token(m)) -
                        d.stored_values_per_token(m),
          d.name);
      BOOST_TEST((narrow == 0 || d.rounds_state), d.name);
    }
  }
  for (const char* arch : {"attnres_full", "attnres_block"})
    for (const char* recompute : {"none", "blocks"}) {
      RunConfig fp32 = config_of(arch);
      fp32.recompute = recompute;
      RunConfig bf16 = fp32;
      bf16.state_dtype = "bf16";
      const bool re = std::string(recompute) == "blocks";
      const double saved =
          estimate_memory(fp32).activations_bytes - estimate_memory(bf16).activations_bytes;
      const DesignInfo& d = find_design(arch);
      // 2 bytes less per value: every block's (under recompute what each block keeps, and the
      // re-run block's).
      const double values = fp32.model.n_layer * d.bf16_state_values_per_token(fp32.model, re) +
                            (re ? d.bf16_state_values_per_token(fp32.model, false) : 0.0);
      BOOST_TEST(saved == tokens(fp32) * 2.0 * values, std::string(arch) + " " + recompute);
      BOOST_TEST(saved > 0);
    }
}

BOOST_AUTO_TEST_CASE(a_cpu_run_on_several_ranks_counts_its_mpi_gradient_sums_scratch) {
  // The rank-order sum (ops/rank_order_sum.cpp) keeps, per rank, its slice (1/p) of every range
  // from each of the p − 1 other ranks: (p − 1)/p of the fp32 gradients.
  RunConfig c = config_of("pre_ln");
  const double params = double(count_parameters(c.model).total);
  const MemoryEstimate one_rank = estimate_memory(c, 1);
  BOOST_TEST(one_rank.reducer_scratch_bytes == 0);
  const MemoryEstimate four_ranks = estimate_memory(c, 4);
  BOOST_TEST(four_ranks.reducer_scratch_bytes == 4.0 * params * 3 / 4);
  BOOST_TEST(four_ranks.total() == one_rank.total() + 4.0 * params * 3 / 4);
  c.backend = "cuda";  // sums on the device (NCCL), or through host copies: no device memory
  BOOST_TEST(estimate_memory(c, 4).reducer_scratch_bytes == 0);
}
