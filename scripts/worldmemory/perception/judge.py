"""Visual judges: a vision-language model (VLM) answering the papers' questions about frames.

Two questions are asked of a judge:

  * WorldMemBench's event checklist (Section 4.5, Appendix D.1): the rollout sampled every 8
    frames (first and last included), in order, with the planned camera-phase ranges; the judge
    first decides whether the event visibly starts during the initial hold, then answers the
    case's eight yes/no questions (:func:`event_prompt`, :func:`parse_event_answer`).
  * PersistBench's same-entity judge (Method 2): a crop of the reference target beside the crop
    the tracker gives in a generated frame; ignoring position and lighting, is it the same entity
    (:func:`same_entity_prompt`, :func:`parse_yes_no`)?

The paper's own prompt template (Appendix D.3) is a figure that our source text does not hold;
the prompts here are our reconstruction of what D.1 says the judge is given, written down in
full below so that a run is reproducible and a reader can compare. One choice beyond D.1: the
event prompt names the initial state and the action (the start decision needs to know which
event), but not the expected next state (the questions ask about it).

A backend has one method, ``ask(content) -> str``: ``content`` is the user turn, a list of text
strings and (H, W, 3) uint8 RGB images in the order shown. Decoding is greedy (deterministic),
with at most ``max_new_tokens`` = 4096 new tokens as in Appendix D.1. Backends:

  * ``transformers-vlm`` (:class:`TransformersJudge`): a Qwen2.5-VL / Qwen3-VL checkpoint (any
    ``AutoModelForImageTextToText`` whose processor has a chat template) from a local directory;
    Qwen's processors need torchvision, which envs/perception.yaml and .venv-perception/ hold
    (requirements-perception.lock), not .venv/ (its CPU torch has no matching torchvision wheel);
  * ``openai-compatible`` (:class:`OpenAICompatibleJudge`): any server with the OpenAI chat
    completions API (vLLM, SGLang, a hosted endpoint), images sent inline as PNG data URLs;
  * ``structure-match`` (perception.structure_judge): no VLM, the same-entity question only.

A backend's ``questions`` names what it answers (EVENT_CHECKLIST, SAME_ENTITY).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
from collections.abc import Sequence

import numpy as np
from PIL import Image

MAX_NEW_TOKENS = 4096  # Appendix D.1
YES, NO = "yes", "no"
EVENT_CHECKLIST, SAME_ENTITY = "event checklist", "same entity"  # the questions (a backend's ``questions``)
CROP_MARGIN = 0.25  # mask_crop's context, a share of the mask's size on every side

EVENT_INSTRUCTIONS = """\
You are assessing a video made by a video world model. The frames above are sampled from it in \
chronological order, every 8th frame plus the last one; each is labelled with its frame index.

The camera followed this planned path (frame ranges are inclusive):
{phases}

The central event of the scene:
- initial state: {initial_state}
- action: {action}

Step 1. Decide whether the event visibly starts during the {hold} (frames {hold_range}): does the \
scene show concrete progress of the action there?
Step 2. Answer every question below with yes or no, from what the frames show.

{questions}

Reply with one JSON object, and nothing after it, in exactly this form:
{answer_form}"""

SAME_ENTITY_PROMPT = """\
The first image is a crop of a target in a reference video; the second is a crop of the region \
a tracker followed in a video made by a world model. Ignoring differences in position, scale, \
viewpoint and lighting, do the two crops show the same entity (the same individual object, not \
merely one of the same kind)? Answer with one word: yes or no."""


def event_prompt(frames: Sequence[np.ndarray], frame_indices: Sequence[int], phases: Sequence[dict],
                 initial_state: str, action: str, questions: Sequence[tuple[str, str]]) -> list:
    """The user turn of the event checklist (Appendix D.1): each sampled frame after its label,
    then the instructions with the phase ranges (``phase_ranges``: end exclusive, printed
    inclusive), the event and the questions (id, text)."""
    if len(frames) != len(frame_indices):
        raise ValueError(f"need one frame index per frame, got {len(frames)} frames and {len(frame_indices)} indices")
    content = []
    for index, frame in zip(frame_indices, frames):
        content += [f"Frame {index}:", frame]
    hold = phases[0]
    answers = ", ".join(f'"{qid}": "yes" or "no"' for qid, _ in questions)
    content.append(EVENT_INSTRUCTIONS.format(
        phases="\n".join(f"- {p['label']} ({p['name']}): frames {p['start']}-{p['end'] - 1}" for p in phases),
        initial_state=initial_state, action=action, hold=hold["label"],
        hold_range=f"{hold['start']}-{hold['end'] - 1}",
        questions="\n".join(f"{qid}: {text}" for qid, text in questions),
        answer_form=f'{{"event_started": "yes" or "no", "answers": {{{answers}}}}}'))
    return content


def same_entity_prompt(reference_crop: np.ndarray, generated_crop: np.ndarray) -> list:
    """The user turn of the same-entity judge (PersistBench Method 2)."""
    return [reference_crop, generated_crop, SAME_ENTITY_PROMPT]


def mask_crop(image: np.ndarray, mask: np.ndarray, margin: float = CROP_MARGIN) -> np.ndarray:
    """The part of ``image`` around ``mask``: its bounding box grown by ``margin`` of its size on
    every side (some context, as a person would crop), cut to the image; ValueError if empty."""
    ys, xs = np.nonzero(mask)
    if len(ys) == 0:
        raise ValueError("cannot crop around an empty mask")
    h, w = mask.shape
    my, mx = int(np.ceil(margin * (np.ptp(ys) + 1))), int(np.ceil(margin * (np.ptp(xs) + 1)))
    return image[max(0, ys.min() - my):min(h, ys.max() + my + 1), max(0, xs.min() - mx):min(w, xs.max() + mx + 1)]


def parse_event_answer(text: str, question_ids: Sequence[str]) -> tuple[bool, dict[str, bool]]:
    """(event started, question id -> answer) from a judge's reply: the last JSON object in it
    (a reasoning model may think aloud first). ValueError quoting the reply when it holds no
    such object or does not answer exactly the questions asked."""
    reply = _last_json_object(text)
    if reply is None or not isinstance(reply.get("answers"), dict) or "event_started" not in reply:
        raise ValueError(f"the judge's reply holds no JSON object with 'event_started' and 'answers': {text!r}")
    answers = reply["answers"]
    if set(answers) != set(question_ids):
        raise ValueError(f"the judge answered {sorted(answers)}, but was asked {sorted(question_ids)}: {text!r}")
    return _boolean(reply["event_started"], text), {q: _boolean(answers[q], text) for q in question_ids}


def parse_yes_no(text: str) -> bool:
    """The last standalone 'yes' or 'no' in a reply (any case); ValueError quoting it otherwise."""
    words = re.findall(r"\b(yes|no)\b", text.lower())
    if not words:
        raise ValueError(f"the judge's reply holds neither 'yes' nor 'no': {text!r}")
    return words[-1] == YES


def _last_json_object(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    for start in reversed([m.start() for m in re.finditer(r"\{", text)]):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "answers" in value:
            return value
    return None


def _boolean(value, text: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (YES, NO, "true", "false"):
        return value.strip().lower() in (YES, "true")
    raise ValueError(f"expected yes or no, got {value!r} in the judge's reply {text!r}")


def _images_and_text(content: Sequence) -> list[tuple[str, object]]:
    """('text', str) or ('image', PIL image) for each part of a user turn, checked."""
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(("text", part))
            continue
        image = np.asarray(part)
        if image.ndim != 3 or image.shape[-1] != 3 or image.dtype != np.uint8:
            raise ValueError(f"a judge image must be (H, W, 3) uint8 RGB, got {image.shape} {image.dtype}")
        parts.append(("image", Image.fromarray(image)))
    return parts


class TransformersJudge:
    """A Qwen2.5-VL / Qwen3-VL checkpoint through transformers, greedy decoding.

    ``model`` is a local directory (the workflow's prefetch step puts a Hugging Face id there);
    images are prepared by the checkpoint's own processor at its saved settings (for Qwen-VL, its
    image processor's ``size`` bounds the pixels per image: ``longest_edge``, formerly
    ``max_pixels``). bf16 on CUDA, float32 on the CPU.
    """

    name = "transformers-vlm"
    questions = (EVENT_CHECKLIST, SAME_ENTITY)

    def __init__(self, model: str, device: str = "cpu", max_new_tokens: int = MAX_NEW_TOKENS):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        from worldmemory.models.device import torch_device
        from worldmemory.perception.base import local_model_dir, local_processor

        self.device = torch_device(device)
        path = local_model_dir(model, "vision-language model")
        self.processor = local_processor(path, AutoProcessor, "vision-language model")
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        self.model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype).eval().to(self.device)
        self.max_new_tokens = int(max_new_tokens)

    def inputs(self, content: Sequence):
        """The tokenised chat (the user turn, then the assistant's start) as model inputs."""
        parts = [{"type": kind, kind: value} for kind, value in _images_and_text(content)]
        messages = [{"role": "user", "content": parts}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                  return_dict=True, return_tensors="pt").to(self.device)

    def ask(self, content: Sequence) -> str:
        import torch

        inputs = self.inputs(content)
        with torch.inference_mode():
            out = self.model.generate(**inputs, do_sample=False, max_new_tokens=self.max_new_tokens)
        new = out[:, inputs["input_ids"].shape[1]:]
        return self.processor.batch_decode(new, skip_special_tokens=True)[0]


class OpenAICompatibleJudge:
    """A model served behind the OpenAI chat completions API, temperature 0.

    ``url`` is the API base (``http://host:8000/v1``); ``served_model`` the name the server
    knows the model by; the key, if the server wants one, is read from the environment variable
    ``api_key_env`` (never from the config).
    """

    name = "openai-compatible"
    questions = (EVENT_CHECKLIST, SAME_ENTITY)

    def __init__(self, url: str, served_model: str, api_key_env: str = "OPENAI_API_KEY",
                 max_new_tokens: int = MAX_NEW_TOKENS, timeout: float = 600.0):
        self.url = url.rstrip("/") + "/chat/completions"
        self.served_model, self.api_key_env = served_model, api_key_env
        self.max_new_tokens, self.timeout = int(max_new_tokens), float(timeout)

    def request(self, content: Sequence) -> dict:
        """The JSON body sent for one user turn."""
        parts = []
        for kind, value in _images_and_text(content):
            if kind == "text":
                parts.append({"type": "text", "text": value})
            else:
                buffer = io.BytesIO()
                value.save(buffer, format="PNG")
                data = base64.b64encode(buffer.getvalue()).decode("ascii")
                parts.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}})
        return {"model": self.served_model, "messages": [{"role": "user", "content": parts}],
                "temperature": 0, "max_tokens": self.max_new_tokens}

    def ask(self, content: Sequence) -> str:
        import requests

        key = os.environ.get(self.api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        response = requests.post(self.url, json=self.request(content), headers=headers, timeout=self.timeout)
        if response.status_code != 200:
            raise RuntimeError(f"{self.url} answered HTTP {response.status_code}: {response.text[:500]}")
        try:
            return response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise RuntimeError(f"{self.url} did not answer as a chat completion: {response.text[:500]}") from None
