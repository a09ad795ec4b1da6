"""The ``transformers-vlm`` judge on a tiny random Qwen3-VL checkpoint saved with its processor (Qwen's
image and video processors, a byte-level BPE tokenizer built here with Qwen's special tokens, and
a chat template that renders an image as Qwen's does), loaded as a released one is. In
.venv-perception/: Qwen's video processor needs torchvision.

Known answers from the image processor's rule (transformers' ``smart_resize``): each side rounded
to a multiple of patch 16 x merge 2 = 32 pixels, then scaled to keep the pixels within
[shortest_edge, longest_edge] = [32 * 32, 64 * 64]; every 2 x 2 patches make one image token.
"""

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2VLImageProcessor,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
    Qwen3VLVideoProcessor,
)
from worldmemory.perception import judge as jd
from worldmemory.perception import registry

pytestmark = pytest.mark.torchvision

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
           "<|video_pad|>"]
TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
            "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ part['text'] }}{% endif %}{% endfor %}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
PIXELS = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}


def tiny_processor() -> Qwen3VLProcessor:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(["yes no frame event started answers"], trainers.BpeTrainer(
        vocab_size=300, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    return Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(size=PIXELS, patch_size=16, merge_size=2),
                            video_processor=Qwen3VLVideoProcessor(size=PIXELS, patch_size=16, merge_size=2),
                            tokenizer=fast, chat_template=TEMPLATE)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    processor = tiny_processor()
    tokens = processor.tokenizer.convert_tokens_to_ids
    head = 16  # mrope_section: a head's 8 rotary pairs split over time, height and width
    config = Qwen3VLConfig(
        text_config=dict(vocab_size=len(processor.tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=head,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3],
                                          "mrope_interleaved": True},
                         eos_token_id=tokens("<|im_end|>"), pad_token_id=tokens("<|endoftext|>")),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=16,
                           deepstack_visual_indexes=[0]),
        image_token_id=tokens("<|image_pad|>"), video_token_id=tokens("<|video_pad|>"),
        vision_start_token_id=tokens("<|vision_start|>"), vision_end_token_id=tokens("<|vision_end|>"))
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("qwen3-vl")
    Qwen3VLForConditionalGeneration(config).save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def judge(checkpoint):
    return registry.create("judge", "transformers-vlm", model=checkpoint, max_new_tokens=4)


def image(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_each_image_is_qwens_vision_block_after_its_label_at_the_processors_size(judge):
    """12 x 16 rounds to 0 x 0, below 32 * 32 pixels: scaled by sqrt(1024 / 192) = 2.31 and rounded
    up to 32 x 64, 2 x 4 patches, 2 tokens. 96 x 200 rounds to 96 x 192, above 64 * 64: scaled by
    1 / sqrt(19200 / 4096) = 0.46 and rounded down to 32 x 64, the same. 64 x 64 stays: 4 x 4
    patches, 4 tokens."""
    frames = [image(12, 16), image(96, 200, 1), image(64, 64, 2)]
    inputs = judge.inputs(jd.event_prompt(frames, [0, 8, 16], [{"name": "V", "start": 0, "end": 32,
                                                                 "label": "initial hold"}], "A box.", "It slides.",
                                          [("q1", "Is it there?")]))
    assert inputs["image_grid_thw"].tolist() == [[1, 2, 4], [1, 2, 4], [1, 4, 4]]
    assert tuple(inputs["pixel_values"].shape) == (8 + 8 + 16, 3 * 2 * 16 * 16)  # a patch: RGB x 2 frames x 16 x 16
    text = judge.processor.tokenizer.decode(inputs["input_ids"][0])
    block = "<|vision_start|>{}<|vision_end|>".format
    assert text.startswith(f"<|im_start|>user\nFrame 0:{block('<|image_pad|>' * 2)}Frame 8:"
                           f"{block('<|image_pad|>' * 2)}Frame 16:{block('<|image_pad|>' * 4)}")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n") and "frames 0-31" in text


def test_greedy_decoding_answers_the_same_twice(judge):
    content = jd.same_entity_prompt(image(12, 16, 1), image(9, 7, 2))
    first = judge.ask(content)
    assert isinstance(first, str) and first == judge.ask(content)


def test_a_checkpoint_without_its_processor_is_refused_by_name(tmp_path, judge):
    judge.model.save_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"vision-language model but not its processor.*prefetch_perception"):
        jd.TransformersJudge(str(tmp_path))
