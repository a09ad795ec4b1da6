"""prefetch: a fetch that cannot reach the Hub stops with the model, revision, cause and fix."""

import os
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.errors import RepositoryNotFoundError
from worldmemory.models import prefetch

REPO = Path(__file__).resolve().parents[2]


def test_offline_names_id_revision_target_and_fix(tmp_path):
    """HF_HUB_OFFLINE=1: huggingface_hub makes no network call, so this runs anywhere."""
    out = tmp_path / "resources" / "models" / "vjepa2-vitl"
    result = subprocess.run(
        [sys.executable, "-m", "worldmemory.models.prefetch", "--id", "facebook/vjepa2-vitl-fpc64-256",
         "--revision", "v1.0", "--target", "resources/models/vjepa2-vitl", "--out", str(out)],
        capture_output=True, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
             "PYTHONPATH": str(REPO / "scripts")})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == ("[prefetch] cannot fetch facebook/vjepa2-vitl-fpc64-256 at revision v1.0 "
                        "from the Hugging Face Hub")
    assert lines[1].startswith("  cause: LocalEntryNotFoundError: ") and "HF_HUB_OFFLINE" in lines[1]
    assert "`./run.sh snakemake resources/models/vjepa2-vitl`" in lines[2] and "network" in lines[2]
    assert "`source: local` with `path: DIR`" in lines[3]
    assert "Traceback" not in result.stderr


def fail_with(error):
    def snapshot_download(**kwargs):
        raise error
    return snapshot_download


def test_connection_error_is_one_line_with_default_revision(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        fail_with(ConnectionError("Name or service not known\n  retrying")))
    with pytest.raises(SystemExit) as info:
        prefetch.main(["--id", "facebook/dinov2-small", "--out", str(tmp_path / "d")])
    message = str(info.value.code)
    assert "cannot fetch facebook/dinov2-small at revision main" in message
    assert "  cause: ConnectionError: Name or service not known retrying\n" in message
    assert "run the prefetch target" in message  # no --target given


def test_missing_repository_says_check_the_id(monkeypatch, tmp_path):
    class NotFound(RepositoryNotFoundError):
        def __init__(self, message):
            Exception.__init__(self, message)

    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        fail_with(NotFound("404 Repository Not Found")))
    with pytest.raises(SystemExit) as info:
        prefetch.main(["--id", "nobody/nothing", "--revision", "abc123", "--target", "resources/models/x",
                       "--out", str(tmp_path / "d")])
    message = str(info.value.code)
    assert "nobody/nothing at revision abc123" in message
    assert "check the id and revision at https://huggingface.co/nobody/nothing" in message
    assert "`./run.sh snakemake resources/models/x`" in message


def test_revision_reaches_the_download(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: calls.append(kw) or kw["local_dir"])
    prefetch.main(["--id", "facebook/dinov2-small", "--revision", "abc123", "--out", str(tmp_path / "d")])
    prefetch.main(["--id", "facebook/dinov2-small", "--out", str(tmp_path / "d")])
    assert [c["revision"] for c in calls] == ["abc123", "main"]
    assert calls[0]["repo_id"] == "facebook/dinov2-small" and calls[0]["local_dir"] == str(tmp_path / "d")
    assert "facebook/dinov2-small@abc123 ->" in capsys.readouterr().out
