"""Known answers for the per-job performance table (worldmemory.workflow.performance)."""

import pytest
from worldmemory.workflow.performance import MARKERS, main, markdown, read_benchmarks, replace_section

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path, *records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{s}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n" for s, rss, cpu in records))


def test_rows_totals_and_the_readme_section(tmp_path):
    root = tmp_path / "benchmarks"
    write(root / "study" / "b.tsv", (2.0, 100.0, 1.5))
    write(root / "study" / "a.tsv", (9.0, 50.0, 9.0), (3.0, 40.0, 2.5))  # repeats: the last one counts
    rows = read_benchmarks(root)
    assert rows == [{"job": "study/a", "wall_s": 3.0, "cpu_s": 2.5, "max_rss_mb": 40.0},
                    {"job": "study/b", "wall_s": 2.0, "cpu_s": 1.5, "max_rss_mb": 100.0}]
    table = markdown(rows)
    assert "| `study/a` | 3.0 | 2.5 | 40 |" in table
    assert table.splitlines()[-1] == "| all 2 jobs (one after another) | 5.0 | 4.0 | 100 (largest) |"

    readme = tmp_path / "README.md"
    readme.write_text(f"# T\n\nbefore\n{MARKERS[0]}\nold table\n{MARKERS[1]}\nafter\n")
    main(["--benchmarks", str(root), "--readme", str(readme)])
    assert readme.read_text() == f"# T\n\nbefore\n{MARKERS[0]}\n{table}{MARKERS[1]}\nafter\n"


def test_per_case_jobs_read_as_one_row_per_directory(tmp_path):
    root = tmp_path / "benchmarks"
    write(root / "study" / "tables.tsv", (1.0, 10.0, 0.5))
    write(root / "study" / "rollout" / "m" / "case_a.tsv", (2.0, 30.0, 1.0))
    write(root / "study" / "rollout" / "m" / "case_b.tsv", (3.0, 20.0, 2.0))
    write(root / "study" / "cases" / "case_a.tsv", (0.5, 5.0, 0.25))
    table = markdown(read_benchmarks(root))
    assert "| `study/rollout/m (2 jobs)` | 5.0 | 3.0 | 30 |" in table
    assert "| `study/cases (1 job)` | 0.5 | 0.2 | 5 |" in table and "| `study/tables` | 1.0 | 0.5 | 10 |" in table
    assert table.splitlines()[-1] == "| all 4 jobs (one after another) | 6.5 | 3.8 | 30 (largest) |"


def test_missing_markers_or_benchmarks_are_named():
    with pytest.raises(ValueError, match="performance:begin"):
        replace_section("no markers here", "| t |\n")
    with pytest.raises(ValueError, match="run the workflow first"):
        markdown([])


def test_before_any_run_the_command_says_so_without_a_traceback(tmp_path):
    with pytest.raises(SystemExit, match=r"^\[performance\] no benchmark files: run the workflow first"):
        main(["--benchmarks", str(tmp_path)])
