"""transformers wrapper of a DepthBench export (`depthbench export --format hf`, doc/export.md).

    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained("runs/demo-hf", trust_remote_code=True)
    out = model(input_ids, labels=input_ids)   # out.loss: `depthbench eval`'s window loss

The model itself is the plain PyTorch module of depthbench_model.py (DepthBenchModel), held as
`self.model`, so the checkpoint names are DepthBench's (doc/parameters.md) below `model.`. This
file only adapts it to transformers: the config class, the causal-LM output and loss, and
generation without a KV cache (every step recomputes the whole window, which is correct for
every design; MoDA, HC, mHC and AttnRes have state a standard cache does not hold).
"""

import torch
from transformers import PreTrainedModel
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_depthbench import DepthBenchConfig
from .depthbench_model import DepthBenchModel


class DepthBenchForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = DepthBenchConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _supports_cache_class = False

    def __init__(self, config):
        super().__init__(config)
        self.model = DepthBenchModel(config.model_fields())
        self.post_init()

    def _init_weights(self, module):
        """DepthBenchModel initialises itself by the design's rules (doc/parameters.md)."""

    def get_output_embeddings(self):
        return None  # the head is DepthBenchModel's own (tied inside it when configured)

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None,
                **unused):
        """Next-token logits of input_ids [B, T]; with labels, the mean cross-entropy of
        labels[:, 1:] given the positions before (ignore_index −100), as transformers' causal
        LMs do: for labels = input_ids it is `depthbench eval`'s window loss."""
        if input_ids is None:
            raise ValueError("DepthBench models take input_ids (no inputs_embeds)")
        if attention_mask is not None and not bool(torch.all(attention_mask == 1)):
            raise ValueError("DepthBench models attend causally over whole windows: padding "
                             "(an attention_mask with zeros) is not supported")
        logits = self.model(input_ids)
        loss = None
        if labels is not None:
            shifted = logits[:, :-1]
            if shifted.dtype in (torch.float16, torch.bfloat16):
                shifted = shifted.float()
            loss = torch.nn.functional.cross_entropy(
                shifted.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                ignore_index=-100)
        if return_dict is False:
            return (logits,) if loss is None else (loss, logits)
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def prepare_inputs_for_generation(self, input_ids, **unused):
        # No KV cache: the whole sequence so far, every step.
        return {"input_ids": input_ids}
