"""The rollout store (common/rollout_store.py): a finished rollout is linked back only when its
identity is unchanged; an unfinished one is made again from scratch."""

import json
import os

import pytest
from worldmemory.common.rollout_store import RolloutStore, identity_digest, model_digest, with_model


def make(store: RolloutStore, key: str, identity: str, dest, content: bytes) -> None:
    work = store.workdir(key, dest)
    (work / "video.mp4").write_bytes(content)
    (work / "cost.json").write_text("{}")
    store.finish(key, identity, dest)


def test_a_finished_rollout_is_linked_back_only_under_its_identity(tmp_path):
    store, dest = RolloutStore(tmp_path / "store"), tmp_path / "out" / "LRLR"
    make(store, "LRLR", "a", dest, b"frames")
    assert (dest / "video.mp4").read_bytes() == b"frames"
    assert (dest / "video.mp4").samefile(tmp_path / "store" / "LRLR" / "video.mp4")  # a hard link
    assert not (dest / "finished.json").exists()  # the mark stays in the store
    again = tmp_path / "again" / "LRLR"
    assert store.fetch("LRLR", "a", again) and (again / "video.mp4").read_bytes() == b"frames"
    assert not store.fetch("LRLR", "b", tmp_path / "other")  # another identity: made again
    assert not store.fetch("LRUD", "a", tmp_path / "other")
    assert not RolloutStore(None).fetch("LRLR", "a", tmp_path / "other")


def test_an_unfinished_rollout_is_never_linked_and_its_leftovers_go(tmp_path):
    store, dest = RolloutStore(tmp_path / "store"), tmp_path / "out" / "LRLR"
    work = store.workdir("LRLR", dest)
    (work / "video.mp4").write_bytes(b"half")  # the model died before the mark
    assert not store.fetch("LRLR", "a", dest)
    assert list(store.workdir("LRLR", dest).iterdir()) == []
    make(store, "LRLR", "a", dest, b"whole")
    mark = json.loads((tmp_path / "store" / "LRLR" / "finished.json").read_text())
    assert mark == {"identity": "a"}


def test_without_a_store_the_rollout_is_made_in_place(tmp_path):
    dest = tmp_path / "out" / "LRLR"
    make(RolloutStore(None), "LRLR", "a", dest, b"frames")
    assert (dest / "video.mp4").read_bytes() == b"frames" and not (dest / "finished.json").exists()


def test_where_links_are_impossible_the_files_are_copied(tmp_path, monkeypatch):
    def no_link(src, dst):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    store, dest = RolloutStore(tmp_path / "store"), tmp_path / "out" / "LRLR"
    make(store, "LRLR", "a", dest, b"frames")
    assert (dest / "video.mp4").read_bytes() == b"frames"
    assert not (dest / "video.mp4").samefile(tmp_path / "store" / "LRLR" / "video.mp4")


def test_the_identity_covers_values_and_file_bytes(tmp_path):
    (tmp_path / "a.png").write_bytes(b"1")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "video.mp4").write_bytes(b"2")
    base = identity_digest({"command": "x", "n": 1}, [tmp_path / "a.png", tmp_path / "dir"])
    assert base == identity_digest({"n": 1, "command": "x"}, [tmp_path / "a.png", tmp_path / "dir"])
    assert base != identity_digest({"command": "y", "n": 1}, [tmp_path / "a.png", tmp_path / "dir"])
    (tmp_path / "dir" / "video.mp4").write_bytes(b"3")
    assert base != identity_digest({"command": "x", "n": 1}, [tmp_path / "a.png", tmp_path / "dir"])


@pytest.mark.parametrize("key", ["LRLR", "static_000"])
def test_a_rerun_replaces_what_the_output_held(tmp_path, key):
    store, dest = RolloutStore(tmp_path / "store"), tmp_path / "out" / key
    make(store, key, "a", dest, b"frames")
    (dest / "stale.txt").write_text("from an older job")
    assert store.fetch(key, "a", dest) and not (dest / "stale.txt").exists()


def test_the_model_digest_changes_with_a_files_content_or_the_version_only(tmp_path):
    """A model entry's version and files (model_digest) enter the identity: an edited script or
    checkpoint, a file added to its weights directory or a new version change it; the same
    entry, or its checkpoint moved elsewhere, does not."""
    (tmp_path / "model.py").write_text("print('v1')")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "ckpt.pt").write_bytes(b"\x00" * 1000)
    files = [tmp_path / "model.py", tmp_path / "weights"]
    base = model_digest("1", files)
    assert base == model_digest("1", files)
    assert base != model_digest("2", files) and base != model_digest(None, files)
    assert base != model_digest("1", files[::-1])
    (tmp_path / "weights" / "ckpt.pt").write_bytes(b"\x00" * 999 + b"\x01")  # same size, one byte
    changed = model_digest("1", files)
    assert changed != base
    (tmp_path / "weights" / "extra.json").write_text("{}")
    assert model_digest("1", files) not in (base, changed)
    (tmp_path / "weights" / "extra.json").unlink()
    (tmp_path / "moved").mkdir()
    (tmp_path / "model.py").rename(tmp_path / "moved" / "model.py")
    assert model_digest("1", [tmp_path / "moved" / "model.py", tmp_path / "weights"]) == changed


def test_the_model_digest_reads_a_file_again_only_once_it_changed(tmp_path):
    """The cache holds each file's sha256 under its stat: an unchanged file is not read again (a
    planted digest is believed), an edited one is."""
    ckpt, cache = tmp_path / "ckpt.pt", tmp_path / "cache" / "digests.json"
    ckpt.write_bytes(b"weights")
    first = model_digest(None, [ckpt], cache)
    assert first == model_digest(None, [ckpt])  # the same digest with or without a cache
    entries = json.loads(cache.read_text())
    assert list(entries) == [str(ckpt.resolve())]
    entries[str(ckpt.resolve())]["sha256"] = "planted"
    cache.write_text(json.dumps(entries))
    assert model_digest(None, [ckpt], cache) != first  # not read again: the planted digest was used
    ckpt.write_bytes(b"weightz")  # the same size, in place: its times tell
    assert model_digest(None, [ckpt], cache) == model_digest(None, [ckpt]) != first


def test_a_model_without_version_or_files_keeps_its_rollouts_identity():
    values = {"command": "x", "sequence": "static_000"}
    assert with_model(values, None) == values  # the stores made before version and files existed stay valid
    assert identity_digest(with_model(values, "a")) != identity_digest(with_model(values, "b"))
