// §10 Block AttnRes: the 2L sublayers are grouped into runs of S; sources are the embedding,
// the completed group sums and the current partial sum (attn_res.hpp). S = ceil(2L /
// attnres_blocks) (8 blocks by default), or attnres_block_size when given; S = 1 is Full AttnRes.
#include "model/residual/attn_res.hpp"

namespace db {
namespace {

// S, the sublayers per block: attnres_block_size when given, else ceil(2L / attnres_blocks).
// Throws db::Error when an option is below 1.
// attnres_block_size "" (the default, JSON null for the reference) means derived:
// ceil(2L / blocks).
int attnres_group_size(const ModelConfig& c) {
  const std::string explicit_size = c.option("attnres_block_size", std::string());
  if (!explicit_size.empty() && explicit_size != "null") {
    const int S = int(c.option("attnres_block_size", 0.0));
    DB_REQUIRE(S >= 1, "attnres_block_size must be ≥ 1");
    return S;
  }
  const int blocks = int(c.option("attnres_blocks", 8.0));
  DB_REQUIRE(blocks >= 1, "attnres_blocks must be ≥ 1");
  // Choice: when 2L is not a multiple of the block count (e.g. L = 42 or 70 in the suites), the
  // blocks take S = ceil(2L / blocks) sublayers and the last one is shorter, so there are never
  // more than `blocks` of them.
  return (2 * c.n_layer + blocks - 1) / blocks;
}

// §10: with one sublayer per block every block sum is one sublayer's output, so the sources are
// exactly Full AttnRes's; the run would measure attnres_full under another name.
std::string one_sublayer_blocks_note(const ModelConfig& c) {
  if (attnres_group_size(c) != 1) return "";
  return "Block AttnRes at L = " + std::to_string(c.n_layer) +
         " has blocks of one sublayer (S = ceil(2L / attnres_blocks) = 1), so it is Full "
         "AttnRes; use L > attnres_blocks / 2 or a smaller model.attnres_blocks";
}

template <class T>
class BlockAttnRes : public AttnResidual<T> {
 public:
  explicit BlockAttnRes(const ModelConfig& c) : AttnResidual<T>(c, attnres_group_size(c)) {}
  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    attnres_group_size(c);  // validates the options when the layout is built
    AttnResidual<T>::declare(layout, c);
  }
};

}  // namespace

DesignInfo attnres_block_design() {
  using V = OptionValues;
  return make_design_info<BlockAttnRes>(
      {.name = "attnres_block",
       .title = "Block AttnRes",
       .summary = "Block Attention Residuals: depth softmax over block sums",
       .section = 10,
       .options = {{"attnres_blocks", "8",
                    "number of blocks; S = ceil(2L / attnres_blocks) sublayers each",
                    V::integer_at_least(1)},
                   {"attnres_block_size", "",
                    "explicit S (sublayers per block); empty = derived from attnres_blocks",
                    V::integer_at_least(1, {"", "null"})}},
       // The mixed inputs, the sources and their gradients.
       .state_values_per_token_block = [](const ModelConfig& c) { return 8.0 * c.d_model; },
       // Under train.recompute = blocks: the block's input mix, the partial sum it ends with
       // (which the next block reads, by reference) and the gradients of the mixes.
       .recompute_values_per_token_block = [](const ModelConfig& c) { return 4.0 * c.d_model; },
       // Its two partial sums; under recompute the one it ends with.
       .bf16_state_values_per_token_block =
           [](const ModelConfig& c, bool recompute) { return (recompute ? 1.0 : 2.0) * c.d_model; },
       .rounds_state = true,
       .run_note = &one_sublayer_blocks_note});
}

}  // namespace db
