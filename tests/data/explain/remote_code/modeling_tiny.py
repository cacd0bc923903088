from torch import nn
from transformers import PreTrainedModel

from .configuration_tiny import TinyConfig


class TinyLayer(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.mix = nn.Linear(h, h)
        self.norm = nn.LayerNorm(h)

    def forward(self, x):
        return x + self.mix(self.norm(x))


class TinyForCausalLM(PreTrainedModel):
    config_class = TinyConfig
    _no_split_modules = ["TinyLayer"]

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(TinyLayer(config.hidden_size) for _ in range(config.num_hidden_layers))
        self.out = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids, **kwargs):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        return (self.out(x),)
