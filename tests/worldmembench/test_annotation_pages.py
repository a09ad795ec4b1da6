"""The human study's annotation pages (Appendix F, Figures 8 and 9) and the export contract.

The page builder runs on a tiny study set over rollouts written here; the pages are then driven
in a real browser (Debian's chromium and chromium-driver through Selenium; CI installs them,
elsewhere the browser tests skip and say why): answers by clicks and by keys, a reload that finds
them kept, the export read back by exports.read_export."""

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from worldmemory.common.video import write_video
from worldmemory.worldmembench.human_study.exports import read_export
from worldmemory.worldmembench.human_study.pages import build

MODELS = ("omniscient", "drifting")  # hidden in the key; the pages must never name them
N_FRAMES, FPS = 24, 8.0
PHASES = [{"phase": "initial hold", "start": 0, "end": 8}, {"phase": "departure", "start": 8, "end": 16},
          {"phase": "revisit", "start": 16, "end": 24}]
QUESTIONS = [{"aspect": aspect, "text": f"Question {i + 1}?"} for i, aspect in enumerate(
    ["return_progress"] * 2 + ["persistence_reset"] * 2 + ["final_state"] * 2 + ["causal_physical"] * 2)]


def _rollouts(root: Path) -> Path:
    for m, model in enumerate(MODELS):
        for case, trajectory in (("human_000", "LRLR"), ("dynamic_000", "LR-Hold")):
            rollout = root / model / case / trajectory
            frames = np.zeros((N_FRAMES, 48, 64, 3), np.uint8)
            frames[..., m] = np.linspace(40, 250, N_FRAMES, dtype=np.uint8)[:, None, None]
            write_video(rollout / "video.mkv", frames, FPS)
            (rollout / "trajectory.json").write_text(json.dumps({"fps": FPS, "n_frames": N_FRAMES}))
    return root


def _study_set(root: Path) -> Path:
    """Three static pairs and two dynamic instances in the contract's format."""
    (root / "static").mkdir(parents=True)
    (root / "dynamic").mkdir()
    pairs = [{"pair": f"p000{i}", "task": "t001", "metric": metric, "case": "human_000", "trajectory": "LRLR",
              "revisit": 1, "reference_frames": [0, 8], "revisit_frames": [16, 24]}
             for i, metric in enumerate(["human_identity", "human_appearance", "env_depth"], 1)]
    key = [{"pair": p["pair"], "model_a": MODELS[i % 2], "model_b": MODELS[1 - i % 2], "score_a": 0.5,
            "score_b": 0.25, "automatic": "A"} for i, p in enumerate(pairs)]
    instances = [{"instance": f"d00{i}", "case": "dynamic_000", "trajectory": "LR-Hold",
                  "event": "A ball rolls off the table.", "phases": PHASES, "questions": QUESTIONS} for i in (1, 2)]
    dynamic_key = [{"instance": f"d00{i}", "model": MODELS[i - 1], "judge": {"started": True, "items": [1] * 8}}
                   for i in (1, 2)]
    for path, data in ((root / "static" / "pairs.json", {"study": "static", "pairs": pairs}),
                       (root / "static" / "key.json", {"study": "static", "seed": 0, "pairs": key}),
                       (root / "dynamic" / "instances.json", {"study": "dynamic", "instances": instances}),
                       (root / "dynamic" / "key.json", {"study": "dynamic", "seed": 0, "instances": dynamic_key})):
        path.write_text(json.dumps(data))
    return root


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("human_study")
    rollouts = _rollouts(root / "rollouts")
    _study_set(root)
    build("static", root / "static/pairs.json", root / "static/key.json", rollouts, root / "static")
    build("dynamic", root / "dynamic/instances.json", root / "dynamic/key.json", rollouts, root / "dynamic")
    return root


def _page_files(page: Path) -> list[Path]:
    return [p for p in page.rglob("*") if p.is_file() and p.name not in ("pairs.json", "instances.json", "key.json")]


def test_the_pages_hold_their_media_and_never_name_a_model(pages):
    static, dynamic = pages / "static", pages / "dynamic"
    assert sorted(p.name for p in (static / "media").iterdir()) == sorted(
        [f"p000{i}_{s}.webm" for i in (1, 2, 3) for s in "AB"]
        + [f"p000{i}_{s}_ref{j}.jpg" for i in (1, 2, 3) for s in "AB" for j in range(4)])
    assert sorted(p.name for p in (dynamic / "media").iterdir()) == ["d001.webm", "d002.webm"]
    for page in (static, dynamic):
        for path in _page_files(page):
            text = path.read_bytes().decode("latin-1").lower()
            for model in MODELS:
                assert model not in str(path.relative_to(page)).lower() and model not in text, (path, model)


def test_a_study_set_that_names_a_model_is_refused(pages, tmp_path):
    instances = json.loads((pages / "dynamic/instances.json").read_text())
    instances["instances"][0]["event"] = "the Drifting model's ball"
    (tmp_path / "instances.json").write_text(json.dumps(instances))
    with pytest.raises(ValueError, match="model 'drifting' would appear on the blinded dynamic page"):
        build("dynamic", tmp_path / "instances.json", pages / "dynamic/key.json", pages / "rollouts", tmp_path / "out")


@pytest.mark.parametrize("field, value, message", [
    ("metric", "human_identiy", r"pairs\[0\]\.metric is 'human_identiy', expected one of human_identity"),
    ("revisit_frames", [16, 25], r"pairs\[0\]\.revisit_frames is \[16, 25\], expected \[start, end\).*<= 24"),
    ("pair", "../p1", r"pair id '\.\./p1' is not a valid id"),
    ("revisit", None, r"pairs\[0\] lacks revisit \(the human-study contract's fields\)"),
])
def test_a_bad_pair_names_its_field(pages, tmp_path, field, value, message):
    pairs = json.loads((pages / "static/pairs.json").read_text())
    pairs["pairs"][0][field] = value
    if value is None:
        del pairs["pairs"][0][field]
    (tmp_path / "pairs.json").write_text(json.dumps(pairs))
    with pytest.raises(ValueError, match=message):
        build("static", tmp_path / "pairs.json", pages / "static/key.json", pages / "rollouts", tmp_path / "out")


# -- the export contract ------------------------------------------------------------------------------
def _export(tmp_path, data, name="ann1") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_read_export_reads_both_studies(tmp_path):
    static = {"study": "static", "annotator": "ann1", "answers": [{"pair": "p0001", "choice": "A"},
                                                                  {"pair": "p0002", "choice": "tie"}]}
    assert read_export(_export(tmp_path, static), "static") == static
    dynamic = {"study": "dynamic", "annotator": "ann_2", "answers": [
        {"instance": "d001", "started": True, "items": [1, 0, 1, 1, 0, 1, 1, 1]},
        {"instance": "d002", "started": False, "items": [0] * 8}]}
    assert read_export(_export(tmp_path, dynamic, "ann_2")) == dynamic


@pytest.mark.parametrize("change, message", [
    ({"study": "dynamic"}, r"study is 'dynamic', expected 'static'"),
    ({"annotator": "ann2"}, r"annotator is 'ann2', expected the file's name, 'ann1'"),
    ({"answers": [{"pair": "p1", "choice": "a"}]}, r"answers\[0\]\.choice is 'a', expected 'A' or 'tie' or 'B'"),
    ({"answers": [{"pair": "p1", "choice": "A"}, {"pair": "p1", "choice": "B"}]},
     r"answers\[1\]\.pair is 'p1', expected each pair answered once"),
])
def test_a_bad_static_export_names_the_file_and_field(tmp_path, change, message):
    path = _export(tmp_path, {"study": "static", "annotator": "ann1", "answers": []} | change)
    with pytest.raises(ValueError, match=f"{tmp_path}/ann1.json: {message}"):
        read_export(path, "static")


@pytest.mark.parametrize("answer, message", [
    ({"started": False, "items": [0, 0, 1, 0, 0, 0, 0, 0]}, r"items is .*expected all 0 when started is false"),
    ({"started": True, "items": [1] * 7}, r"items is .*expected a list of 8 answers, each 0 or 1"),
    ({"started": True, "items": [1] * 7 + [True]}, r"items is .*expected a list of 8 answers"),
    ({"started": "yes", "items": [1] * 8}, r"started is 'yes', expected true or false"),
])
def test_a_bad_dynamic_answer_names_its_field(tmp_path, answer, message):
    path = _export(tmp_path, {"study": "dynamic", "annotator": "ann1", "answers": [{"instance": "d1", **answer}]})
    with pytest.raises(ValueError, match=rf"ann1\.json: answers\[0\]\.{message}"):
        read_export(path, "dynamic")


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


def _open(browser, page: Path, annotator: str):
    browser.get(page.as_uri() + "/index.html")
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
    for suffix in ("json", "csv"):
        (browser.downloads / f"{annotator}.{suffix}").unlink(missing_ok=True)
        browser.find_element("id", f"export-{suffix}").click()
    csv = _wait(lambda: (browser.downloads / f"{annotator}.csv").is_file(), "the CSV export") and (
        browser.downloads / f"{annotator}.csv").read_text()
    _wait(lambda: (browser.downloads / f"{annotator}.json").is_file(), "the JSON export")
    return read_export(browser.downloads / f"{annotator}.json", study), csv


def _chosen(browser) -> list[str]:
    return [b.get_attribute("id") for b in browser.find_elements("css selector", "button.chosen")]


def test_the_static_page_records_clicks_and_keys_and_resumes(browser, pages):
    from selenium.webdriver.common.keys import Keys

    _open(browser, pages / "static", "ann1")
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
    assert export == {"study": "static", "annotator": "ann1", "answers": [
        {"pair": "p0001", "choice": "B"}, {"pair": "p0002", "choice": "tie"}, {"pair": "p0003", "choice": "A"}]}
    assert csv == "pair,choice\np0001,B\np0002,tie\np0003,A\n"
    browser.find_element("id", "switch").click()  # another annotator starts afresh
    browser.find_element("id", "annotator").send_keys("ann2")
    browser.find_element("id", "start").click()
    assert _text(browser, "progress") == "pair 1 of 3 · 0 answered"


def test_the_dynamic_page_gates_the_checklist(browser, pages):
    _open(browser, pages / "dynamic", "ann3")
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
    export, csv = _export_read_back(browser, "ann3", "dynamic")
    assert export["answers"] == [{"instance": "d001", "started": False, "items": [0] * 8},
                                 {"instance": "d002", "started": True, "items": [1, 0, 1, 1, 1, 1, 1, 1]}]
    assert csv.splitlines()[1:] == ["d001,false,0,0,0,0,0,0,0,0", "d002,true,1,0,1,1,1,1,1,1"]


def test_the_page_asks_one_question_per_metric_of_table6():
    from worldmemory.worldmembench.human_study.exports import METRICS
    from worldmemory.worldmembench.human_study.pages import QUESTIONS

    assert tuple(QUESTIONS) == METRICS
