"""transformers config of a DepthBench export (`depthbench export --format hf`, doc/export.md).

config.json holds DepthBench's own model fields (arch, design_options, d_model, n_layer, ...);
the usual transformers names (hidden_size, num_hidden_layers, ...) read them through
attribute_map. The model is in depthbench_model.py, the wrapper in modeling_depthbench.py.
"""

from transformers import PretrainedConfig

# The fields of DepthBenchModel's config (depthbench_model.DepthBenchSettings reads them).
MODEL_FIELDS = ("arch", "design_options", "d_model", "n_layer", "n_head", "n_kv_head",
                "head_dim", "ff", "vocab_size", "qk_norm", "tie_embeddings", "rope_theta",
                "norm_eps")


class DepthBenchConfig(PretrainedConfig):
    model_type = "depthbench"
    attribute_map = {"hidden_size": "d_model", "num_hidden_layers": "n_layer",
                     "num_attention_heads": "n_head", "num_key_value_heads": "n_kv_head",
                     "intermediate_size": "ff"}

    def __init__(self, arch="pre_ln", design_options=None, d_model=64, n_layer=4, n_head=4,
                 n_kv_head=None, head_dim=None, ff=None, vocab_size=257, qk_norm=False,
                 tie_embeddings=False, rope_theta=10000.0, norm_eps=1e-6,
                 max_position_embeddings=2048, **kwargs):
        self.arch = arch
        self.design_options = dict(design_options or {})
        self.d_model, self.n_layer, self.n_head = d_model, n_layer, n_head
        self.n_kv_head = n_kv_head if n_kv_head is not None else n_head
        self.head_dim = head_dim if head_dim is not None else d_model // n_head
        self.ff = ff if ff is not None else (8 * d_model + 47) // 48 * 16
        self.vocab_size = vocab_size
        self.qk_norm, self.tie_embeddings = qk_norm, tie_embeddings
        self.rope_theta, self.norm_eps = rope_theta, norm_eps
        self.max_position_embeddings = max_position_embeddings  # the training window length
        # The model ties its head itself (no lm_head tensor): transformers must not tie again.
        kwargs["tie_word_embeddings"] = False
        kwargs.setdefault("use_cache", False)  # no KV cache: each step recomputes the window
        super().__init__(**kwargs)

    def model_fields(self):
        """The dict DepthBenchModel is built from."""
        return {key: getattr(self, key) for key in MODEL_FIELDS}
