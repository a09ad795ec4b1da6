"""What a catalog-grade workflow repository carries besides its code: a license, a citation of
the workflow and the three papers, and the Snakemake workflow catalog's settings."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PAPERS = {"arXiv:2610.19063": "WorldMemBench", "arXiv:2609.20819": "PersistBench",
          "arXiv:2610.07355": "Tracking Is Not Permanence"}


def test_license_is_mit_and_matches_the_package_metadata():
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert 'license = "MIT"' in (REPO / "pyproject.toml").read_text()


def test_citation_names_the_workflow_and_the_three_papers():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["authors"]
    cited = {ref["repository"]: ref["title"] for ref in cff["references"]}
    assert set(cited) == set(PAPERS)
    for arxiv, name in PAPERS.items():
        assert name in cited[arxiv]
        assert all(a.get("family-names") or a.get("name") for a in
                   next(r for r in cff["references"] if r["repository"] == arxiv)["authors"])


def test_catalog_settings_describe_the_deployment():
    catalog = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert catalog["software-stack-deployment"]["conda"] is True and catalog["report"] is True
    assert set(catalog["mandatory-flags"]) == {"desc", "flags"}
