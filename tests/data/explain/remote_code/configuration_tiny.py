from transformers import PretrainedConfig


class TinyConfig(PretrainedConfig):
    model_type = "tiny_custom"

    def __init__(self, hidden_size=48, num_hidden_layers=2, vocab_size=500, **kwargs):
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.vocab_size = vocab_size
        super().__init__(**kwargs)
