"""The annotation pages of WorldMemBench's human study (Appendix F, Figures 8 and 9).

One self-contained page per study in its own folder (``<study>/page/``, beside, never above, the
study set and its hidden key, so that serving the folder, ``python -m http.server -d
<study>/page``, cannot serve the key; the build refuses a key or study set inside it), opened
from disk (file://) or served: index.html, annotate.js and style.css (the templates in page/
beside this module), data.js (the study as ``window.STUDY``, since a file:// page cannot fetch
JSON) and media/. data.js carries the study set's digest (exports.file_digest of the study-set
file); the page keeps the answers in the browser's localStorage under the study, the annotator
and that digest (a reload or a new session resumes; another study set starts afresh), shows "pair
37 of 504", answers by clicks or keys and exports ``<annotator>.<study>.json`` with the digest
(exports.py's contract) and a CSV of the same answers.

- static (Figure 8): blinded A/B pairs. Each side shows its own rollout's reference frames (the
  initial observation, ``reference_frames``: Section 4.1 scores a revisit against the fixed
  reference set V of the same rollout, so the annotator sees what the metric compares) and its
  revisit clip (``revisit_frames``), under the metric's question; A wins / Tie / B wins.
- dynamic (Figure 9): the whole rollout with its phase ranges (Appendix D.1 gives the judge the
  same ranges), the event, the gate "has the event visibly started during the initial hold?"
  first; if not, the eight items are 0 and disabled, as the judge's gate (Section 4.3). Items are
  the case's questions as worded, recorded as Yes = 1, No = 0 (the expected answers are in the key).

The hidden key names the rollout behind each side; only media named after the pair or instance
(media/p0001_A.webm, media/p0001_A_ref0.jpg, media/d001.webm) reach the page, and the build
refuses a page whose study-set texts (the event and the questions: what the study set may word
freely) would name a model (blinding.py); the page's own words (static, reference, clip, media,
A, B) are not checked, so a model may be named any of them. Every clip and image is brought to
the study's one size (``--width`` x ``--height``, worldmembench.cases.width / height;
common.video.read_video_at), so a model's output resolution does not tell it apart. Clips are
VP9 WebM (common.video.write_webm), which Debian's Chromium plays from file://; reference frames
are JPEG.

    python -m worldmemory.worldmembench.human_study.pages --study static --set static/pairs.json \\
        --key static/key.json --rollouts results/worldmembench/rollouts --width 128 --height 96 \\
        --out static/page
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.ids import check_id, shown
from worldmemory.common.video import read_video_at, write_webm
from worldmemory.worldmembench.human_study.blinding import named_in
from worldmemory.worldmembench.human_study.exports import EVENT_FIELDS, N_ITEMS, STUDIES, UNIT, file_digest

TEMPLATES = Path(__file__).with_name("page")
PAGE_FILES = {"page.html": "index.html", "annotate.js": "annotate.js", "style.css": "style.css"}
MEDIA = "media"
REFERENCE_IMAGES = 4  # reference frames shown per side, evenly spaced over the initial observation
# The question an annotator answers per Static Memory metric (Appendix F is silent on the wording;
# each asks about what the metric measures, Section 4.2).
QUESTIONS = {
    "human_identity": "In which revisit is the person the same individual as in its reference frames?",
    "human_appearance": "In which revisit does the person's appearance (clothing, hair, colours) best match "
                        "its reference frames?",
    "object_appearance": "In which revisit does the object's appearance (colour, texture) best match its "
                         "reference frames?",
    "object_geometry": "In which revisit does the object keep the shape and size of its reference frames?",
    "env_visible": "In which revisit does more of the scene seen in the reference frames reappear?",
    "env_depth": "In which revisit does the scene keep the 3-D layout (depth) of its reference frames?",
}


def build(study: str, set_file, key_file, rollouts, out, size: tuple[int, int]) -> dict:
    """Write ``study``'s page into the folder ``out`` from its study set and hidden key, every
    clip and image at ``size`` (width, height); returns the page's data."""
    units = UNIT[study]
    out, rollouts = Path(out), Path(rollouts)
    for path in (set_file, key_file):
        if Path(path).resolve().is_relative_to(out.resolve()):
            raise ValueError(f"{path} is inside the page's folder {out}, which annotators are served; "
                             f"build the page into its own folder (<study>/page) beside the study set")
    digest = file_digest(set_file)
    entries = _read(set_file, study, f"{units}s")
    key_data = _read(key_file, study, f"{units}s", whole=True)
    if key_data.get("study_set") != digest:
        raise ValueError(f"{key_file}: the key of the study set {key_data.get('study_set')}, but {set_file} is "
                         f"{digest}; pass the key written with this study set, or rebuild the study sets")
    key = {row.get(units): row for row in key_data[f"{units}s"]}
    shutil.rmtree(out / MEDIA, ignore_errors=True)
    (out / MEDIA).mkdir(parents=True)
    make = _static_item if study == "static" else _dynamic_item
    items, clips = [], {}
    for i, entry in enumerate(entries):
        where = f"{set_file}: {units}s[{i}]"
        unit = check_id(units, entry.get(units), f"fix {where}")
        if unit not in key:
            raise ValueError(f"{key_file}: no entry for {units} {unit!r} of {set_file}; rebuild the study set")
        items.append(make(entry, key[unit], rollouts, out, where, clips, size))
    data = {"study": study, "digest": digest, "items": items}
    _refuse_model_names(items, key.values(), key_file, set_file, study)
    (out / "data.js").write_text("window.STUDY = " + json.dumps(data, indent=1, sort_keys=True) + ";\n")
    for template, name in PAGE_FILES.items():
        shutil.copyfile(TEMPLATES / template, out / name)
    return data


def _read(path, study: str, field: str, whole: bool = False):
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the study file ({e}); rebuild the study set") from e
    if not isinstance(data, dict) or data.get("study") != study or not isinstance(data.get(field), list):
        raise ValueError(f"{path}: expected {{'study': {study!r}, {field!r}: [...]}} (the human-study contract), "
                         f"got study {shown(data.get('study') if isinstance(data, dict) else data)}; "
                         f"pass the {study} study's files")
    return data if whole else data[field]


def _static_item(pair: dict, key: dict, rollouts: Path, out: Path, where: str, clips: dict,
                 size: tuple[int, int]) -> dict:
    item = _fields(pair, ("task", "metric", "case", "trajectory", "revisit", "reference_frames", "revisit_frames"),
                   where)
    if item["metric"] not in QUESTIONS:
        raise ValueError(f"{where}.metric is {shown(item['metric'])}, expected one of {', '.join(QUESTIONS)}; "
                         f"fix the study set")
    item |= {"id": pair["pair"], "question": QUESTIONS[item["metric"]]}
    for side in ("A", "B"):
        video, fps, n = _rollout(rollouts, key.get(f"model_{side.lower()}"), pair, where)
        ref, rev = (_frames(pair.get(f), n, f"{where}.{f}") for f in ("reference_frames", "revisit_frames"))
        shown_refs = np.unique(np.linspace(ref.start, ref.stop - 1, REFERENCE_IMAGES).round().astype(int))
        names = []
        for j, frame in enumerate(read_video_at(video, *size, frames=shown_refs)):
            names.append(f"{MEDIA}/{pair['pair']}_{side}_ref{j}.jpg")
            Image.fromarray(frame).save(out / names[-1], quality=92)
        clip = f"{MEDIA}/{pair['pair']}_{side}.webm"
        _write_clip(out, clip, video, rev, fps, clips, size)
        item[side] = {"reference": names, "clip": clip}
    return item


def _dynamic_item(instance: dict, key: dict, rollouts: Path, out: Path, where: str, clips: dict,
                  size: tuple[int, int]) -> dict:
    item = _fields(instance, ("case", "trajectory", "event", "phases", "questions"), where)
    if not isinstance(item["event"], dict) or sorted(item["event"]) != sorted(EVENT_FIELDS) or not all(
            isinstance(v, str) for v in item["event"].values()):
        raise ValueError(f"{where}.event is {shown(item['event'])}, expected the texts {', '.join(EVENT_FIELDS)}; "
                         f"rebuild the study set")
    if not isinstance(item["questions"], list) or len(item["questions"]) != N_ITEMS:
        raise ValueError(f"{where}.questions is {shown(item['questions'])}, expected {N_ITEMS} checklist "
                         f"questions; fix the study set")
    video, fps, n = _rollout(rollouts, key.get("model"), instance, where)
    for j, phase in enumerate(item["phases"]):
        _frames([phase.get("start"), phase.get("end")], n, f"{where}.phases[{j}]")
    clip = f"{MEDIA}/{instance['instance']}.webm"
    _write_clip(out, clip, video, range(n), fps, clips, size)
    return item | {"id": instance["instance"], "clip": clip, "fps": fps, "n_frames": n}


def _write_clip(out: Path, name: str, video: Path, frames: range, fps: float, clips: dict,
                size: tuple[int, int]) -> None:
    """``frames`` of ``video`` at ``size`` as the WebM ``out/name``. A slot shown in several pairs (one per
    metric) is encoded once and copied under each pair's own name (the name must not tell pairs
    apart); the encoding is bit-exact, so the copy is what a second encoding would write."""
    source = (video, frames.start, frames.stop)
    if source in clips:
        shutil.copyfile(out / clips[source], out / name)
        return
    write_webm(out / name, read_video_at(video, *size, frames=frames), fps)
    clips[source] = name


def _fields(entry: dict, names: tuple[str, ...], where: str) -> dict:
    """The study entry's ``names`` fields (what the page shows), or an error naming those missing."""
    missing = [name for name in names if name not in entry]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)} (the human-study contract's fields); "
                         f"rebuild the study set")
    return {name: entry[name] for name in names}


def _rollout(rollouts: Path, model, entry: dict, where: str) -> tuple[Path, float, int]:
    """(video, fps, frames) of the rollout of ``model`` on the entry's case and trajectory."""
    model = check_id("model", model, f"fix the key of {where}")
    parts = [check_id(k, entry.get(k), f"fix {where}") for k in ("case", "trajectory")]
    rollout = rollouts.joinpath(model, *parts)
    videos = sorted(rollout.glob("video.*"))
    if not videos or not (rollout / "trajectory.json").is_file():
        raise ValueError(f"{rollout}: no rollout video and trajectory.json for {where}; "
                         f"build the model's rollouts first")
    trajectory = json.loads((rollout / "trajectory.json").read_text())
    return videos[0], float(trajectory["fps"]), int(trajectory["n_frames"])


def _frames(bounds, n_frames: int, where: str) -> range:
    """Frame range [start, end) of a study entry, inside the rollout's ``n_frames``."""
    if (not isinstance(bounds, list) or len(bounds) != 2 or not all(type(b) is int for b in bounds)
            or not 0 <= bounds[0] < bounds[1] <= n_frames):
        raise ValueError(f"{where} is {shown(bounds)}, expected [start, end) frame indices with "
                         f"0 <= start < end <= {n_frames} (the rollout's frames); fix the study set")
    return range(*bounds)


def _refuse_model_names(items: list[dict], key_rows, key_file, set_file, study: str) -> None:
    """Blinding (Appendix F): the study set's free texts on the page (the event, the questions)
    must not name a model of the key. The page's own words and ids are not checked: they are the
    same for every model."""
    models = {row[f] for row in key_rows for f in ("model", "model_a", "model_b") if f in row}
    for item in items:
        texts = [*item.get("event", {}).values(), *(q.get("text", "") for q in item.get("questions", []))]
        for model in sorted(m for m in models if any(named_in(m, t) for t in texts)):
            raise ValueError(f"{set_file}: model {model!r} ({key_file}) would appear on the blinded {study} page "
                             f"in the texts of {item['id']} (case {item['case']}); reword the case's event and "
                             f"questions or rename the model in worldmembench.models")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", choices=STUDIES, required=True)
    ap.add_argument("--set", dest="set_file", required=True, type=Path,
                    help="static/pairs.json or dynamic/instances.json (what annotators may see)")
    ap.add_argument("--key", required=True, type=Path, help="the study's key.json (the hidden models)")
    ap.add_argument("--rollouts", required=True, type=Path, help="results/worldmembench/rollouts")
    ap.add_argument("--width", required=True, type=int, help="the study's clip and image width")
    ap.add_argument("--height", required=True, type=int, help="the study's clip and image height")
    ap.add_argument("--out", required=True, type=Path, help="the page's own folder (<study>/page)")
    args = ap.parse_args(argv)
    data = build(args.study, args.set_file, args.key, args.rollouts, args.out, (args.width, args.height))
    print(f"{args.out / 'index.html'}: {len(data['items'])} {UNIT[args.study]}s")


if __name__ == "__main__":
    main()
