"""Table writing every study shares (report/tables.py)."""

import pytest
from worldmemory.report.tables import concat_csv


def test_score_files_join_text_for_text(tmp_path):
    """The per-model score lists join their cases' files: the parts' rows as written, one
    header; a part written with other columns is refused."""
    (tmp_path / "a.csv").write_text("x,y\n1,0.30000000000000004\n")
    (tmp_path / "b.csv").write_text("x,y\n")  # a case with no rows of this family
    (tmp_path / "c.csv").write_text("x,y\n2,1e-07\n")
    assert concat_csv([tmp_path / p for p in ("a.csv", "b.csv", "c.csv")], tmp_path / "all.csv") == 2
    assert (tmp_path / "all.csv").read_text() == "x,y\n1,0.30000000000000004\n2,1e-07\n"
    (tmp_path / "d.csv").write_text("x,z\n3,4\n")
    with pytest.raises(ValueError, match="d.csv: its header differs"):
        concat_csv([tmp_path / "a.csv", tmp_path / "d.csv"], tmp_path / "bad.csv")
