"""The human study's annotation pages (Appendix F, Figures 8 and 9) and the export contract.

The page builder runs on a tiny study set over rollouts written here; the pages are then driven
in a real browser (Debian's chromium and chromium-driver through Selenium; CI installs them,
elsewhere the browser tests skip and say why): answers by clicks and by keys, a reload that finds
them kept, the export read back by exports.read_export; the page served from its folder with the
key out of reach."""

import functools
import http.server
import json
import re
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from worldmemory.common.video import video_shape, write_video
from worldmemory.worldmembench.human_study.exports import ANNOTATOR, EXPORT_NAME, file_digest, read_export, read_exports
from worldmemory.worldmembench.human_study.pages import build

MODELS = ("omniscient", "drifting")  # hidden in the key; the pages must never name them
# the study's size; the second model writes twice it, which the page must not show
SIZE, SIZES = (64, 48), {"omniscient": (64, 48), "drifting": (128, 96)}
N_FRAMES, FPS = 24, 8.0
PHASES = [{"phase": "initial hold", "start": 0, "end": 8}, {"phase": "departure", "start": 8, "end": 16},
          {"phase": "revisit", "start": 16, "end": 24}]
QUESTIONS = [{"aspect": aspect, "text": f"Question {i + 1}?"} for i, aspect in enumerate(
    ["return_progress"] * 2 + ["persistence_reset"] * 2 + ["final_state"] * 2 + ["causal_physical"] * 2)]


def _rollouts(root: Path, models=MODELS) -> Path:
    for m, model in enumerate(models):
        width, height = SIZES.get(model, SIZE)
        for case, trajectory in (("human_000", "LRLR"), ("dynamic_000", "LR-Hold")):
            rollout = root / model / case / trajectory
            frames = np.zeros((N_FRAMES, height, width, 3), np.uint8)
            frames[..., m % 3] = np.linspace(40, 250, N_FRAMES, dtype=np.uint8)[:, None, None]
            write_video(rollout / "video.mkv", frames, FPS)
            (rollout / "trajectory.json").write_text(json.dumps({"fps": FPS, "n_frames": N_FRAMES}))
    return root


EVENT = {"initial_state": "The ball rests on the table.", "action": "The ball rolls off the table.",
         "expected_next_state": "The ball lies on the floor."}


def _study_set(root: Path, models=MODELS) -> Path:
    """Three static pairs and two dynamic instances in the contract's format, each key recording
    its study set's digest."""
    (root / "static").mkdir(parents=True)
    (root / "dynamic").mkdir()
    pairs = [{"pair": f"p000{i}", "task": "t001", "metric": metric, "case": "human_000", "trajectory": "LRLR",
              "revisit": 1, "reference_frames": [0, 8], "revisit_frames": [16, 24]}
             for i, metric in enumerate(["human_identity", "human_appearance", "env_depth"], 1)]
    key = [{"pair": p["pair"], "model_a": models[i % 2], "model_b": models[1 - i % 2], "score_a": 0.5,
            "score_b": 0.25, "automatic": "A"} for i, p in enumerate(pairs)]
    instances = [{"instance": f"d00{i}", "case": "dynamic_000", "trajectory": "LR-Hold",
                  "event": EVENT, "phases": PHASES, "questions": QUESTIONS} for i in (1, 2)]
    dynamic_key = [{"instance": f"d00{i}", "model": models[i - 1], "expected": [1, 0] * 4,
                    "judge": {"started": True, "items": [1] * 8}} for i in (1, 2)]
    for study, unit, shown_set, hidden in (("static", "pairs", pairs, key),
                                           ("dynamic", "instances", instances, dynamic_key)):
        set_file = root / study / f"{unit}.json"
        set_file.write_text(json.dumps({"study": study, unit: shown_set}))
        key = {"study": study, "seed": 0, "study_set": file_digest(set_file), unit: hidden}
        (root / study / "key.json").write_text(json.dumps(key))
    return root


def _build(root: Path, rollouts: Path) -> Path:
    """Both pages, each in its own folder <study>/page beside its study set and key."""
    for study, unit in (("static", "pairs"), ("dynamic", "instances")):
        build(study, root / study / f"{unit}.json", root / study / "key.json", rollouts, root / study / "page", SIZE)
    return root


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("human_study")
    return _build(_study_set(root), _rollouts(root / "rollouts"))


def _page_files(page: Path) -> list[Path]:
    return [p for p in page.rglob("*") if p.is_file()]


def test_the_pages_hold_their_media_and_never_name_a_model(pages):
    static, dynamic = pages / "static/page", pages / "dynamic/page"
    assert sorted(p.name for p in static.iterdir()) == ["annotate.js", "data.js", "index.html", "media", "style.css"]
    assert sorted(p.name for p in (static / "media").iterdir()) == sorted(
        [f"p000{i}_{s}.webm" for i in (1, 2, 3) for s in "AB"]
        + [f"p000{i}_{s}_ref{j}.jpg" for i in (1, 2, 3) for s in "AB" for j in range(4)])
    assert sorted(p.name for p in (dynamic / "media").iterdir()) == ["d001.webm", "d002.webm"]
    for page in (static, dynamic):
        for path in _page_files(page):
            text = path.read_bytes().decode("latin-1").lower()
            for model in MODELS:
                assert model not in str(path.relative_to(page)).lower() and model not in text, (path, model)


def _rebuild(pages: Path, tmp_path: Path, study: str, change) -> dict:
    """``study``'s page built in tmp_path from its study set changed by ``change`` and its key
    (recording the changed set's digest)."""
    unit = {"static": "pairs", "dynamic": "instances"}[study]
    data = json.loads((pages / study / f"{unit}.json").read_text())
    change(data[unit])
    (tmp_path / f"{unit}.json").write_text(json.dumps(data))
    key = json.loads((pages / study / "key.json").read_text()) | {"study_set": file_digest(tmp_path / f"{unit}.json")}
    (tmp_path / "key.json").write_text(json.dumps(key))
    return build(study, tmp_path / f"{unit}.json", tmp_path / "key.json", pages / "rollouts", tmp_path / "page", SIZE)


def test_a_study_set_that_names_a_model_is_refused(pages, tmp_path):
    with pytest.raises(ValueError, match=r"instances.json: model 'drifting' \(.*key.json\) would appear on the "
                                         r"blinded dynamic page in the texts of d001 \(case dynamic_000\); reword"):
        _rebuild(pages, tmp_path, "dynamic", lambda rows: rows[0]["event"].update(action="the Drifting model's ball"))


def test_every_clip_and_image_is_brought_to_the_studys_size(pages):
    """The drifting model writes 128 x 96, twice the study's 64 x 48: its clips and reference
    frames come at 64 x 48 like every other, so the size does not tell the models apart."""
    media = [*(pages / "static/page/media").iterdir(), *(pages / "dynamic/page/media").iterdir()]
    assert {video_shape(p)[1:] for p in media if p.suffix == ".webm"} == {SIZE[::-1]}
    assert {Image.open(p).size for p in media if p.suffix == ".jpg"} == {SIZE}
    assert video_shape(pages / "rollouts/drifting/human_000/LRLR/video.mkv")[1:] == (96, 128)


def test_a_key_of_another_study_set_or_inside_the_page_is_refused(pages, tmp_path):
    with pytest.raises(ValueError, match=r"key.json: the key of the study set 0{64}, but .*pairs.json is [0-9a-f]{64}; "
                                         r"pass the key written with this study set"):
        key = json.loads((pages / "static/key.json").read_text()) | {"study_set": "0" * 64}
        (tmp_path / "key.json").write_text(json.dumps(key))
        build("static", pages / "static/pairs.json", tmp_path / "key.json", pages / "rollouts", tmp_path / "page", SIZE)
    with pytest.raises(ValueError, match=r"pairs.json is inside the page.s folder .*/static, which annotators are"):
        build("static", pages / "static/pairs.json", pages / "static/key.json", pages / "rollouts", pages / "static",
              SIZE)


@pytest.mark.parametrize("models", [("static", "media"), ("reference", "clip"), ("b", "study")])
def test_models_named_after_the_pages_words_work(tmp_path, models):
    """The page's own words (the study, media/, each side's reference frames and clip, sides A and
    B) are never checked as model names: a model may be named any of them."""
    root = _study_set(tmp_path, models)
    _build(root, _rollouts(tmp_path / "rollouts", models))
    assert json.loads((root / "static/page/data.js").read_text()[len("window.STUDY = "):-2])["study"] == "static"


def test_the_config_check_refuses_a_model_named_by_the_embedded_case_texts():
    """'a' is a word of the embedded events' texts, which the blinded dynamic page shows: refused
    before any job, with a fix that applies (leaving it out of the study passes); 'b' and the
    page's words pass."""
    from worldmemory.workflow.config_checks import check_config

    def problems(models, human=None):
        config = {"worldmembench": {"models": {m: {"kind": "reference", "reference": "omniscient"} for m in models},
                                    "human_study": {"models": human} if human else {}}}
        try:
            check_config(config)
        except ValueError as e:
            return str(e)
        return ""
    assert "worldmembench.models.a: the name is a word of the embedded cases' event and checklist texts" in problems(
        ["a", "b"])
    assert "Fix: rename the model (e.g. 'model-a'), or leave it out of worldmembench.human_study.models" in problems(
        ["a", "b"])
    assert "worldmembench.models.b:" not in problems(["a", "b"])
    assert "human study" not in problems(["a", "b", "static"], human=["b", "static"])


@pytest.mark.parametrize("field, value, message", [
    ("metric", "human_identiy", r"pairs\[0\]\.metric is 'human_identiy', expected one of human_identity"),
    ("revisit_frames", [16, 25], r"pairs\[0\]\.revisit_frames is \[16, 25\], expected \[start, end\).*<= 24"),
    ("pair", "../p1", r"pair id '\.\./p1' is not a valid id"),
    ("revisit", None, r"pairs\[0\] lacks revisit \(the human-study contract's fields\)"),
])
def test_a_bad_pair_names_its_field(pages, tmp_path, field, value, message):
    def change(rows):
        rows[0][field] = value
        if value is None:
            del rows[0][field]
    with pytest.raises(ValueError, match=message):
        _rebuild(pages, tmp_path, "static", change)


# -- the export contract ------------------------------------------------------------------------------
DIGEST = "ab" * 32  # a study set's sha256


def _export(tmp_path, data, name="ann1.static.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_the_page_and_the_reader_take_the_same_annotator_names():
    """The export's name is built from the annotator (EXPORT_NAME from ANNOTATOR) and the page's
    field asks for the same names."""
    script = (Path(build.__code__.co_filename).parent / "page" / "annotate.js").read_text()
    assert f"const ANNOTATOR = /^{ANNOTATOR.pattern}$/;" in script
    assert EXPORT_NAME.fullmatch("ann_1-b.static (2).json")["annotator"] == "ann_1-b"
    assert EXPORT_NAME.fullmatch("ann.1.static.json") is None  # '.' is no annotator character


def test_read_export_reads_both_studies_and_the_browsers_renamed_copy(tmp_path):
    static = {"study": "static", "study_set": DIGEST, "annotator": "ann1",
              "answers": [{"pair": "p0001", "choice": "A"}, {"pair": "p0002", "choice": "tie"}]}
    assert read_export(_export(tmp_path, static), "static") == static
    assert read_export(_export(tmp_path, static, "ann1.static (2).json"), "static") == static
    dynamic = {"study": "dynamic", "study_set": DIGEST, "annotator": "ann_2", "answers": [
        {"instance": "d001", "started": True, "items": [1, 0, 1, 1, 0, 1, 1, 1]},
        {"instance": "d002", "started": False, "items": [0] * 8}]}
    assert read_export(_export(tmp_path, dynamic, "ann_2.dynamic.json")) == dynamic


@pytest.mark.parametrize("change, name, message", [
    ({"study": "dynamic"}, "ann1.static.json", r"study is 'dynamic', expected 'static'"),
    ({"study_set": None}, "ann1.static.json", r"study_set is None, expected the sha256 of the study set"),
    ({"annotator": "ann2"}, "ann1.static.json", r"the file's name is 'ann1.static.json', expected 'ann2.static.json'"),
    ({}, "ann1.json", r"the file's name is 'ann1.json', expected 'ann1.static.json' \(its annotator and study; "
                      r"a browser's renamed copy such as 'ann1.static \(1\).json' is read too\)"),
    ({"answers": []}, "ann1.static.json", r"answers is \[\], expected a non-empty list"),
    ({"answers": [{"pair": "p1", "choice": "a"}]}, "ann1.static.json",
     r"answers\[0\]\.choice is 'a', expected 'A' or 'tie' or 'B'"),
    ({"answers": [{"pair": "p1", "choice": "A"}, {"pair": "p1", "choice": "B"}]}, "ann1.static.json",
     r"answers\[1\]\.pair is 'p1', expected each pair answered once"),
])
def test_a_bad_static_export_names_the_file_and_field(tmp_path, change, name, message):
    export = {"study": "static", "study_set": DIGEST, "annotator": "ann1", "answers": [{"pair": "p1", "choice": "A"}]}
    path = _export(tmp_path, export | change, name)
    with pytest.raises(ValueError, match=f"{tmp_path}/{re.escape(name)}: {message}"):
        read_export(path, "static")


@pytest.mark.parametrize("answer, message", [
    ({"started": False, "items": [0, 0, 1, 0, 0, 0, 0, 0]}, r"items is .*expected all 0 when started is false"),
    ({"started": True, "items": [1] * 7}, r"items is .*expected a list of 8 answers, each 0 or 1"),
    ({"started": True, "items": [1] * 7 + [True]}, r"items is .*expected a list of 8 answers"),
    ({"started": "yes", "items": [1] * 8}, r"started is 'yes', expected true or false"),
])
def test_a_bad_dynamic_answer_names_its_field(tmp_path, answer, message):
    path = _export(tmp_path, {"study": "dynamic", "study_set": DIGEST, "annotator": "ann1",
                              "answers": [{"instance": "d1", **answer}]}, "ann1.dynamic.json")
    with pytest.raises(ValueError, match=rf"ann1\.dynamic\.json: answers\[0\]\.{message}"):
        read_export(path, "dynamic")


def _exports_of(pages: Path, directory: Path, files: dict) -> Path:
    """A directory of static exports of the built study set: file name -> answers (pair, choice)."""
    digest = file_digest(pages / "static/pairs.json")
    directory.mkdir(parents=True, exist_ok=True)
    for name, answers in files.items():
        _export(directory, {"study": "static", "study_set": digest, "annotator": name.split(".")[0],
                            "answers": [{"pair": p, "choice": c} for p, c in answers]}, name)
    return directory


def test_read_exports_reads_one_export_per_annotator_of_the_study_set(pages, tmp_path):
    directory = _exports_of(pages, tmp_path, {"ann1.static (1).json": [("p0001", "A")],
                                              "ann2.static.json": [("p0002", "B"), ("p0003", "tie")]})
    exports = read_exports(directory, "static", pages / "static/pairs.json")
    assert [(e["annotator"], len(e["answers"])) for e in exports] == [("ann1", 1), ("ann2", 2)]


@pytest.mark.parametrize("files, message", [
    ({"ann1.static.json": [("p0001", "A")], "ann1.static (1).json": [("p0001", "B")]},
     r"ann1.static.json: a second export of annotator 'ann1' \(also .*ann1.static \(1\).json\); keep the one to "
     r"count \(the latest Export\) and remove the other"),
    ({"ann1.static.json": [("p0001", "A"), ("p9999", "B"), ("t001", "A")]},
     r"ann1.static.json: answers pairs 'p9999', 't001' that .*static/pairs.json does not have; read it against the "
     r"study set its page was built from, or remove those answers"),
    ({"ann1.dynamic.json": [("p0001", "A")]},
     r"ann1.dynamic.json: an export of the dynamic study; move it to that study's directory"),
    ({"ann1.json": [("p0001", "A")]},
     r"ann1.json: not an export's name, expected <annotator>.static.json \(the page's Export\) or the browser's "
     r"renamed copy '<annotator>.static \(1\).json'; rename it if it is one, or remove it"),
])
def test_read_exports_refuses_duplicates_unknown_ids_and_misplaced_files(pages, tmp_path, files, message):
    with pytest.raises(ValueError, match=message):
        read_exports(_exports_of(pages, tmp_path, files), "static", pages / "static/pairs.json")


def test_exports_of_another_study_set_are_refused_naming_both_digests(pages, tmp_path):
    """The issue's case: exports of the seed-0 study read against a seed-1 study set."""
    directory = _exports_of(pages, tmp_path / "exports", {"ann1.static.json": [("p0001", "A")]})
    other = tmp_path / "pairs.json"
    other.write_text((pages / "static/pairs.json").read_text().replace("human_identity", "env_visible"))
    ours, theirs = file_digest(pages / "static/pairs.json"), file_digest(other)
    with pytest.raises(ValueError, match=rf"ann1.static.json: exported from the study set {ours}, but {other} is "
                                         rf"{theirs}; read these exports against the study set their page was built"):
        read_exports(directory, "static", other)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"empty: no annotator exports \(<annotator>.static.json\) of the static"):
        read_exports(empty, "static", other)


# -- in a real browser ----------------------------------------------------------------------------------
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module, downloading into its own directory."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (requirements.lock)")
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; "
                    ".ci/run installs them as root)")
    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required"):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    yield driver
    driver.quit()


def _wait(condition, what: str, timeout: float = 5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _open(browser, page: Path | str, annotator: str):
    """Open the page (a folder on disk, or a served page's URL) afresh as ``annotator``."""
    browser.get(page.as_uri() + "/index.html" if isinstance(page, Path) else page)
    browser.execute_script("localStorage.clear()")
    browser.refresh()
    browser.find_element("id", "annotator").send_keys(annotator)
    browser.find_element("id", "start").click()


def _text(browser, element_id: str) -> str:
    return browser.find_element("id", element_id).text


def _key(browser, key: str):
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(key).perform()


def _export_read_back(browser, annotator: str, study: str) -> dict:
    """The page's JSON and CSV exports, named <annotator>.<study>.json / .csv; the JSON read back."""
    names = {suffix: browser.downloads / f"{annotator}.{study}.{suffix}" for suffix in ("json", "csv")}
    for suffix, path in names.items():
        path.unlink(missing_ok=True)
        browser.find_element("id", f"export-{suffix}").click()
    csv = _wait(lambda: names["csv"].is_file(), "the CSV export") and names["csv"].read_text()
    _wait(lambda: names["json"].is_file(), "the JSON export")
    return read_export(names["json"], study), csv


def _chosen(browser) -> list[str]:
    return [b.get_attribute("id") for b in browser.find_elements("css selector", "button.chosen")]


def test_the_static_page_records_clicks_and_keys_and_resumes(browser, pages):
    from selenium.webdriver.common.keys import Keys

    _open(browser, pages / "static/page", "ann1")
    assert _text(browser, "progress") == "pair 1 of 3 · 0 answered"
    assert "human_identity" not in _text(browser, "task") and "same individual" in _text(browser, "task")
    # the clips decode in this browser (VP9 WebM from file://)
    _wait(lambda: browser.execute_script("const v = document.getElementById('clip-B'); "
                                         "return v.readyState >= 2 && v.videoWidth === 64"), "the clip to decode")
    assert browser.execute_script("return [...document.images].every(i => i.complete && i.naturalWidth === 64)")
    browser.find_element("id", "choose-B").click()  # answers and moves on
    assert _text(browser, "progress") == "pair 2 of 3 · 1 answered"
    _key(browser, "t")
    _key(browser, "3")  # pair 3: B wins by key, then changed to A by the other key
    _key(browser, "a")
    assert _text(browser, "progress") == "pair 3 of 3 · 3 answered" and _chosen(browser) == ["choose-A"]
    _key(browser, Keys.ARROW_LEFT)
    assert _text(browser, "progress").startswith("pair 2 of 3") and _chosen(browser) == ["choose-tie"]
    browser.refresh()  # resumes with the same annotator, at the same pair, with the answers
    assert _text(browser, "progress") == "pair 2 of 3 · 3 answered" and _text(browser, "who") == "annotator ann1"
    export, csv = _export_read_back(browser, "ann1", "static")
    assert export == {"study": "static", "study_set": file_digest(pages / "static/pairs.json"), "annotator": "ann1",
                      "answers": [
        {"pair": "p0001", "choice": "B"}, {"pair": "p0002", "choice": "tie"}, {"pair": "p0003", "choice": "A"}]}
    assert csv == "pair,choice\np0001,B\np0002,tie\np0003,A\n"
    # a second Export is saved as the browser's renamed copy (headless Chromium blocks a third
    # download, so the test names it as Chromium does): read alone, a duplicate beside the first
    both = browser.downloads / "both"
    both.mkdir(exist_ok=True)
    for name in ("ann1.static.json", "ann1.static (1).json"):
        shutil.copyfile(browser.downloads / "ann1.static.json", both / name)
    with pytest.raises(ValueError, match=r"a second export of annotator 'ann1'"):
        read_exports(both, "static", pages / "static/pairs.json")
    (both / "ann1.static.json").unlink()
    assert read_exports(both, "static", pages / "static/pairs.json") == [export]
    browser.find_element("id", "switch").click()  # another annotator starts afresh
    browser.find_element("id", "annotator").send_keys("ann2")
    browser.find_element("id", "start").click()
    assert _text(browser, "progress") == "pair 1 of 3 · 0 answered"


def test_the_dynamic_page_gates_the_checklist(browser, pages):
    _open(browser, pages / "dynamic/page", "ann3")
    assert _text(browser, "progress") == "instance 1 of 2 · 0 answered"
    assert [p.text for p in browser.find_elements("css selector", ".phase")] == [
        "initial hold 0–7", "departure 8–15", "revisit 16–23"]
    assert browser.find_element("id", "item-1-yes").get_attribute("disabled")  # gate first
    browser.find_element("id", "gate-no").click()  # not started: all items 0, on to the next
    assert _text(browser, "progress") == "instance 2 of 2 · 1 answered"
    _key(browser, "y")
    assert not browser.find_element("id", "item-1-yes").get_attribute("disabled")
    browser.find_element("id", "item-1-yes").click()
    browser.find_element("id", "item-2-no").click()
    _key(browser, "345678")
    assert _text(browser, "progress") == "instance 2 of 2 · 2 answered"
    browser.find_element("id", "prev").click()
    buttons = browser.find_elements("css selector", ".items button")
    assert len(buttons) == 16 and all(b.get_attribute("disabled") for b in buttons)
    assert _chosen(browser) == ["gate-no"] + [f"item-{i}-no" for i in range(1, 9)]  # shown as 0
    browser.refresh()
    assert _text(browser, "progress") == "instance 1 of 2 · 2 answered"
    assert "Is the answer to this question No?" not in _text(browser, "task")
    export, csv = _export_read_back(browser, "ann3", "dynamic")
    assert export["answers"] == [{"instance": "d001", "started": False, "items": [0] * 8},
                                 {"instance": "d002", "started": True, "items": [1, 0, 1, 1, 1, 1, 1, 1]}]
    assert csv.splitlines()[1:] == ["d001,false,0,0,0,0,0,0,0,0", "d002,true,1,0,1,1,1,1,1,1"]


@pytest.fixture
def served(pages):
    """``python -m http.server`` on the static page's folder, as docs/targets.md serves it."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(pages / "static/page"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_served_page_works_and_cannot_serve_the_key(browser, served):
    """Serving the page's folder serves the page, never the study's key nor the exports beside it:
    every path to them inside the served root is a 404, from the page and by a raw request."""
    import http.client

    _open(browser, served + "/index.html", "ann9")
    assert _text(browser, "progress") == "pair 1 of 3 · 0 answered"
    _wait(lambda: browser.execute_script("return document.getElementById('clip-A').readyState >= 2"), "the clip")
    paths = ["key.json", "../key.json", "../../static/key.json", "%2e%2e/key.json", "pairs.json", "exports/",
             "../exports/sim1.static.json"]
    statuses = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(arguments[0].map((p) => fetch(p).then((r) => r.status))).then(done);", paths)
    assert statuses == [404] * len(paths)
    host, port = served.removeprefix("http://").split(":")
    for path in ("/../key.json", "/../../static/key.json", "/..%2fkey.json"):
        connection = http.client.HTTPConnection(host, int(port))
        connection.request("GET", path)
        assert connection.getresponse().status == 404, path
        connection.close()
    assert browser.execute_async_script("const done = arguments[0];"
                                        "fetch('data.js').then((r) => done(r.status));") == 200


def test_the_page_asks_one_question_per_metric_of_table6():
    from worldmemory.worldmembench.human_study.exports import METRICS
    from worldmemory.worldmembench.human_study.pages import QUESTIONS

    assert tuple(QUESTIONS) == METRICS
