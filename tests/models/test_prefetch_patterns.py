"""prefetch --patterns: a repository that is not laid out as a transformers checkpoint names its files."""

import huggingface_hub
from worldmemory.models import prefetch


def fetch(monkeypatch, tmp_path, *extra):
    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: calls.append(kw) or kw["local_dir"])
    prefetch.main(["--id", "nvidia/Cosmos-Predict1-4B", "--out", str(tmp_path / "d"), *extra])
    return calls[0]["allow_patterns"]


def test_the_default_is_unchanged_for_existing_targets(monkeypatch, tmp_path):
    assert fetch(monkeypatch, tmp_path) == ["*.json", "*.jinja", "*.safetensors"]


def test_cosmos_repositories_name_their_files(monkeypatch, tmp_path):
    assert fetch(monkeypatch, tmp_path, "--patterns", "model.pt") == ["model.pt"]
    assert fetch(monkeypatch, tmp_path, "--patterns", "*.jit") == ["*.jit"]
    assert fetch(monkeypatch, tmp_path, "--patterns", "encoder.jit", "decoder.jit") == ["encoder.jit", "decoder.jit"]
