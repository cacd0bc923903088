"""A vision-language model asked with `--module` (issue 43, section 2): the factory builds transformers'
Qwen2.5-VL from the config of a recorded run (tests/data/explain/truth), as a user's training script would."""

from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).parent.parent / "truth" / "ddp_cap1-qwen25vl-w2.json"


def build():
    import transformers

    cfg = json.loads(RUN.read_text())["config"]
    return transformers.Qwen2_5_VLForConditionalGeneration(transformers.AutoConfig.for_model(**cfg))
