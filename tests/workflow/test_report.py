"""`snakemake --report`: every table and figure of both studies, captioned with the paper's table or
figure it rebuilds and grouped by study, from one real run of the tiny configs.

The run combines tests/config/tiny.yaml and tiny_worldmembench.yaml and turns on the conditional
tables beside the paper: a stand-in for a paper checkpoint (a tiny random VJEPA2Model already in
resources/models/, as test_workflow.py does) and a reference model labelled with a paper model's
name. It trains nothing (about 40 s on 2 cores); each report takes a few seconds.
"""

import html
import json
import re
import zipfile
from pathlib import Path

import pytest
import yaml
from worldmemory.models.vjepa2 import build_model

CONFIGS = Path(__file__).resolve().parents[1] / "config"
PERM = "Tracking Is Not Permanence (permanence)"
WMB = "WorldMemBench (worldmembench)"
# Every table and figure -> (study, subcategory, the paper's item its caption names).
EXPECTED = {
    "results/permanence/table3.csv": (PERM, "Table 3", "Table 3"),
    "results/permanence/table3_long.csv": (PERM, "Table 3", "Table 3"),
    "results/permanence/object_size.csv": (PERM, "Appendix I", "Object size"),
    "results/permanence/table3_vs_paper.csv": (PERM, "Table 3", "Table 3"),
    "results/permanence/figure2.png": (PERM, "Figure 2", "Figure 2a"),
    "results/permanence/figure7.png": (PERM, "Figure 7", "Figure 7"),
    "results/permanence/table9.csv": (PERM, "Table 9", "Table 9"),
    "results/table2.csv": (WMB, "Table 2", "Table 2"),
    "results/worldmembench/table2_nan_reasons.csv": (WMB, "Table 2", "Table 2"),
    "results/worldmembench/table2_departure.csv": (WMB, "Table 2", "Table 2"),
    "results/worldmembench/quality_calibration.csv": (WMB, "Perception agreement", "Table 2"),
    "results/worldmembench/table2_vs_paper.csv": (WMB, "Table 2", "Table 2"),
    "results/worldmembench/table4.csv": (WMB, "Table 4", "Table 4"),
    "results/worldmembench/table5.csv": (WMB, "Table 5", "Table 5"),
    "results/worldmembench/table8.csv": (WMB, "Table 8", "Table 8"),
    "results/worldmembench/table9.csv": (WMB, "Table 9", "Table 9"),
    "results/worldmembench/table10.csv": (WMB, "Table 10", "Table 10"),
    "results/worldmembench/figure5.png": (WMB, "Figure 5", "Figure 5"),
    "results/worldmembench/table11.csv": (WMB, "Table 11", "Table 11"),
    "results/worldmembench/table12.csv": (WMB, "Table 12", "Table 12"),
    "results/worldmembench/table12_vs_paper.csv": (WMB, "Table 12", "Table 12"),
    "results/worldmembench/table13.csv": (WMB, "Table 13", "Table 13"),
}
PAPER_TITLE = {PERM: "Tracking Is Not Permanence", WMB: "WorldMemBench"}
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def built(tmp_path_factory, snakemake):
    """A workdir with every default target of both studies built."""
    workdir = tmp_path_factory.mktemp("report")
    perm = yaml.safe_load((CONFIGS / "tiny.yaml").read_text())
    wmb = yaml.safe_load((CONFIGS / "tiny_worldmembench.yaml").read_text())
    assert perm.keys() & wmb.keys() == {"device", "threads"}
    assert all(perm[k] == wmb[k] for k in ("device", "threads"))
    config = {**perm, **wmb}
    random = perm["permanence"]["models"]["tiny-test-random"]
    # one probe is enough for every permanence item: the stand-in, whose paper numbers print beside ours
    config["permanence"]["models"] = {"vith-stand-in": {"source": "hf", "id": "facebook/vjepa2-vith-fpc64-256"}}
    del config["permanence"]["curricula"]  # they continue tiny-test-scratch, not listed here (and train nothing)
    del config["permanence"]["videomae"]  # drawn beside tiny-test-scratch; not in the main job
    build_model(random["config"], seed=1).save_pretrained(workdir / "resources" / "models" / "vith-stand-in")
    models = config["worldmembench"]["models"]
    config["worldmembench"]["models"] = {m: models[m] for m in ("omniscient", "amnesic")}  # enough for a report
    config["worldmembench"]["models"]["omniscient"]["paper_name"] = "LingBot-World"
    config["worldmembench"]["agreement"] = False  # no paper item (test_worldmembench_workflow builds it)
    path = workdir / "both.yaml"
    path.write_text(yaml.safe_dump(config))
    snakemake(workdir, path)
    return workdir, path


def _report_data(text):
    """The report's results and categories (JSON that the report's scripts read)."""
    def var(name):
        return json.loads(re.search(rf"^ *var {name} = ([{{\"].*);$", text, re.M).group(1))
    return var("results"), var("categories"), var("workflow_desc")


@pytest.fixture(scope="module")
def zip_report(built, snakemake):
    workdir, config = built
    report = workdir / "results" / "report.zip"
    snakemake(workdir, config, "--report", str(report))
    with zipfile.ZipFile(report) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    return workdir, files, _report_data(files["report/report.html"].decode())


def test_every_table_and_figure_is_in_the_report(zip_report):
    workdir, files, (results, _, _) = zip_report
    assert set(results) == set(EXPECTED)
    for path, result in results.items():
        stored = files[f"report/{result['data_uri']}"]
        assert stored == (workdir / path).read_bytes(), path
    assert results["results/permanence/figure2.png"]["mime_type"] == "image/png"
    assert results["results/table2.csv"]["mime_type"] == "text/csv"


def test_each_caption_names_the_papers_table_or_figure(zip_report):
    _, _, (results, _, _) = zip_report
    for path, (study, _, item) in EXPECTED.items():
        caption = html.unescape(re.sub(r"<[^>]+>", "", results[path]["caption"]))
        assert f"{item} of {PAPER_TITLE[study]}" in caption, (path, caption)
        assert "system-message" not in results[path]["caption"], path  # no RST errors
    nan = html.unescape(re.sub(r"<[^>]+>", "", results["results/table2.csv"]["caption"]))
    assert "table2_nan_reasons.csv" in nan and "omniscient" in nan  # models from the config


def test_items_are_grouped_by_study_and_paper_item(zip_report):
    _, _, (_, categories, description) = zip_report
    assert set(categories) == {PERM, WMB}
    grouped = {path: (study, sub) for study, subs in categories.items()
               for sub, paths in subs.items() for path in paths}
    assert grouped == {path: (study, sub) for path, (study, sub, _) in EXPECTED.items()}
    assert PERM in description and WMB in description and "system-message" not in description


def test_the_self_contained_html_report(built, snakemake):
    workdir, config = built
    report = workdir / "results" / "report.html"
    snakemake(workdir, config, "--report", str(report))
    results, categories, _ = _report_data(report.read_text())
    assert set(results) == set(EXPECTED) and set(categories) == {PERM, WMB}
    assert results["results/worldmembench/figure5.png"]["data_uri"].startswith("data:image/png")
    assert results["results/worldmembench/table13.csv"]["data_uri"].startswith("data:text/csv")
