"""The visual judges: the prompts, the reply parsing, the crop, and both backends (a tiny random
vision-language checkpoint loaded as a released one is; a real HTTP server on localhost)."""

import base64
import io
import json

import numpy as np
import pytest
import torch
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    CLIPImageProcessor,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)
from worldmemory.perception import judge as jd
from worldmemory.perception import registry

PHASES = [{"name": "V", "start": 0, "end": 32, "label": "initial hold"},
          {"name": "D1", "start": 32, "end": 60, "label": "departure 1"},
          {"name": "R1", "start": 60, "end": 88, "label": "return 1"},
          {"name": "H", "start": 88, "end": 97, "label": "final hold"}]
QUESTIONS = [("q1", "Is the box at the right end?"), ("q2", "Does the box jump?")]
IMAGE_TOKEN = "<image>"


def image(seed=0, h=12, w=16):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def event_content(n=3):
    return jd.event_prompt([image(i) for i in range(n)], [0, 8, 16][:n], PHASES, "A box rests on the left.",
                           "The box slides right.", QUESTIONS)


def test_the_event_prompt_labels_each_frame_and_prints_the_phases_inclusive():
    content = event_content()
    assert content[0:6:2] == ["Frame 0:", "Frame 8:", "Frame 16:"]
    assert all(isinstance(c, np.ndarray) for c in content[1:6:2])
    text = content[-1]
    assert "- initial hold (V): frames 0-31" in text and "- final hold (H): frames 88-96" in text
    assert "during the initial hold (frames 0-31)" in text
    assert "initial state: A box rests on the left." in text and "action: The box slides right." in text
    assert "q1: Is the box at the right end?\nq2: Does the box jump?" in text
    assert '"answers": {"q1": "yes" or "no", "q2": "yes" or "no"}' in text
    with pytest.raises(ValueError, match="one frame index per frame"):
        jd.event_prompt([image()], [0, 8], PHASES, "", "", QUESTIONS)


def test_the_last_json_object_of_a_reply_is_the_answer():
    reply = ('Thinking: frame {8} shows motion. Draft {"event_started": "no", "answers": {}}\n'
             'Final: {"event_started": "Yes", "answers": {"q1": "yes", "q2": false}}')
    assert jd.parse_event_answer(reply, ["q1", "q2"]) == (True, {"q1": True, "q2": False})
    with pytest.raises(ValueError, match=r"answered \['q1'\], but was asked \['q1', 'q2'\]"):
        jd.parse_event_answer('{"event_started": "yes", "answers": {"q1": "no"}}', ["q1", "q2"])
    with pytest.raises(ValueError, match="expected yes or no, got 'maybe'"):
        jd.parse_event_answer('{"event_started": "yes", "answers": {"q1": "maybe", "q2": "no"}}', ["q1", "q2"])
    with pytest.raises(ValueError, match="holds no JSON object"):
        jd.parse_event_answer("The event starts; q1 yes, q2 no.", ["q1", "q2"])


def test_yes_or_no_is_the_last_one_said():
    assert jd.parse_yes_no("Yes.") is True
    assert jd.parse_yes_no("At first yes, but the colour differs: No") is False
    assert jd.parse_yes_no("nobody knows; yes") is True  # 'nobody' is not 'no'
    with pytest.raises(ValueError, match="neither 'yes' nor 'no'"):
        jd.parse_yes_no("It is unclear.")


def test_a_crop_keeps_a_margin_of_context_within_the_image():
    img = np.arange(20 * 30 * 3, dtype=np.uint8).reshape(20, 30, 3)
    mask = np.zeros((20, 30), bool)
    mask[8:12, 10:18] = True  # 4 x 8: margins ceil(0.25 * size) = 1 and 2
    np.testing.assert_array_equal(jd.mask_crop(img, mask), img[7:13, 8:20])
    corner = np.zeros((20, 30), bool)
    corner[0:4, 0:4] = True
    assert jd.mask_crop(img, corner).shape == (5, 5, 3)  # cut at the image's edge
    with pytest.raises(ValueError, match="empty mask"):
        jd.mask_crop(img, np.zeros((20, 30), bool))


# ------------------------------------------------------------ transformers, tiny checkpoint
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny random LLaVA (CLIP vision tower, Llama text model) with a byte-level BPE tokenizer
    and a chat template: the generic image-text-to-text path a Qwen-VL checkpoint takes too."""
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", IMAGE_TOKEN]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(["yes no frame event started answers"], trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
                "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
                "{% else %}{{ part['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    processor = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 28},
                                                                  crop_size={"height": 28, "width": 28}),
                               tokenizer=fast, chat_template=template, patch_size=14,
                               vision_feature_select_strategy="full", num_additional_image_tokens=1)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, image_size=28, patch_size=14).to_dict(),
        text_config=LlamaConfig(vocab_size=len(fast), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=1, eos_token_id=fast.eos_token_id,
                                pad_token_id=fast.pad_token_id).to_dict(),
        image_token_id=fast.convert_tokens_to_ids(IMAGE_TOKEN), vision_feature_select_strategy="full",
        vision_feature_layer=-1)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("vlm")
    LlavaForConditionalGeneration(config).save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)


def test_the_chat_shows_each_image_after_its_label_at_the_processors_size(checkpoint):
    judge = registry.create("judge", "transformers-vlm", model=checkpoint, max_new_tokens=4)
    inputs = judge.inputs(event_content())
    assert tuple(inputs["pixel_values"].shape) == (3, 3, 28, 28)  # one 28 x 28 image per frame
    text = judge.processor.tokenizer.decode(inputs["input_ids"][0])
    per_image = IMAGE_TOKEN * 5  # 2 x 2 patches and the CLS token of the vision tower
    assert text.startswith(f"<|im_start|>user\nFrame 0:{per_image}Frame 8:{per_image}Frame 16:{per_image}")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert "frames 0-31" in text


def test_greedy_decoding_answers_the_same_twice(checkpoint):
    judge = jd.TransformersJudge(checkpoint, max_new_tokens=4)
    content = jd.same_entity_prompt(image(1), image(2))
    first = judge.ask(content)
    assert isinstance(first, str) and first == judge.ask(content)


def test_a_missing_checkpoint_names_the_prefetch_step(tmp_path):
    with pytest.raises(FileNotFoundError, match="prefetch_perception"):
        jd.TransformersJudge(str(tmp_path / "absent"))
    with pytest.raises(ValueError, match=r"\(H, W, 3\) uint8 RGB"):
        jd.OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m").request([np.zeros((4, 4), np.uint8)])


# ------------------------------------------------------------ OpenAI-compatible endpoint
def test_the_endpoint_gets_the_images_inline_and_greedy_settings(chat_server, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "secret")
    chat_server.reply = lambda request: "Yes"
    judge = registry.create("judge", "openai-compatible", url=chat_server.url + "/", served_model="judge-model",
                            api_key_env="JUDGE_KEY")
    reference, generated = image(1), image(2, h=9, w=7)
    assert jd.parse_yes_no(judge.ask(jd.same_entity_prompt(reference, generated))) is True
    body, headers = chat_server.requests[0], chat_server.headers[0]
    assert headers["Authorization"] == "Bearer secret"
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("judge-model", 0, 4096)
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]
    assert parts[2]["text"] == jd.SAME_ENTITY_PROMPT
    for part, sent in zip(parts, (reference, generated)):
        prefix, data = part["image_url"]["url"].split(",", 1)
        assert prefix == "data:image/png;base64"
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(base64.b64decode(data)))), sent)


def test_an_endpoint_error_names_the_url_and_status(chat_server):
    chat_server.status = 503
    judge = jd.OpenAICompatibleJudge(chat_server.url, "judge-model")
    with pytest.raises(RuntimeError, match=r"chat/completions answered HTTP 503: not served here"):
        judge.ask(["hello"])
    assert json.dumps(chat_server.requests[0]["messages"]) == json.dumps(
        [{"role": "user", "content": [{"type": "text", "text": "hello"}]}])
