// §9 Full AttnRes: every sublayer mixes the embedding and all earlier raw sublayer outputs with
// a per-token softmax over depth (attn_res.hpp with groups of one sublayer).
#include "model/residual/attn_res.hpp"

namespace db {
namespace {

template <class T>
class FullAttnRes : public AttnResidual<T> {
 public:
  explicit FullAttnRes(const ModelConfig& c) : AttnResidual<T>(c, 1) {}
};

}  // namespace

DesignInfo attnres_full_design() {
  return make_design_info<FullAttnRes>(
      {.name = "attnres_full",
       .title = "Full AttnRes",
       .summary = "Full Attention Residuals: per-token softmax over all earlier outputs",
       .section = 9,
       // The mixed inputs, the sources and their gradients.
       .state_values_per_token_block = [](const ModelConfig& c) { return 8.0 * c.d_model; },
       // Under train.recompute = blocks: the block's input mix, its two outputs as sources, and
       // the gradients of the mixes and sources.
       .recompute_values_per_token_block = [](const ModelConfig& c) { return 7.0 * c.d_model; },
       // Its two sources, in either count.
       .bf16_state_values_per_token_block = [](const ModelConfig& c,
                                               bool) { return 2.0 * c.d_model; },
       .rounds_state = true});
}

}  // namespace db
