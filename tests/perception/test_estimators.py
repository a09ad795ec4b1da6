"""Estimator entries of the config: a name or a mapping, its weights, its job's resources."""

import re

import pytest
from worldmemory.perception.estimators import RESOURCES, parse, prefetched, weights_slug

ENTRY = {"backend": "laion-aesthetic", "model": "openai/clip-vit-large-patch14", "revision": "abc123",
         "head": "heads/linear.pth", "device": "cuda", "gpu": 1, "mem_mb": 16000}


def test_a_name_is_a_backend_without_options():
    estimator = parse("brisque")
    assert (estimator.backend, estimator.options, estimator.resources) == ("brisque", {}, RESOURCES)
    assert estimator.inputs() == [] and estimator.backend_options() == {}


def test_a_mapping_splits_into_options_weights_and_resources():
    estimator = parse(ENTRY)
    assert estimator.resources == {"gpu": 1, "mem_mb": 16000, "runtime": RESOURCES["runtime"]}
    assert estimator.fetched and estimator.weights_dir() == (
        "resources/models/perception/openai__clip-vit-large-patch14@abc123")
    assert estimator.inputs() == [estimator.weights_dir(), "heads/linear.pth"]
    assert estimator.backend_options() == {"model": estimator.weights_dir(), "head": "heads/linear.pth",
                                           "device": "cuda"}


def test_a_local_directory_is_read_in_place(tmp_path):
    estimator = parse({"backend": "laion-aesthetic", "model": str(tmp_path), "head": "h.pth"})
    assert not estimator.fetched and estimator.weights_dir() == str(tmp_path)
    assert prefetched({"worldmembench": {"perception": {"aesthetic_quality": ENTRY, "tracking": "optical-flow"}},
                       "persistbench": {"perception": {"tracking": {"backend": "x", "model": str(tmp_path)}}}}) == {
        "openai__clip-vit-large-patch14@abc123": ("openai/clip-vit-large-patch14", "abc123")}


@pytest.mark.parametrize("bad", [{"model": "x/y"}, ["laion-aesthetic"], {"backend": 3}])
def test_an_entry_without_a_backend_name_is_refused(bad):
    with pytest.raises(ValueError, match="backend"):
        parse(bad)


# Revisions (and ids) that a lossy slug maps onto one directory: '/', '_' and ' ' alike, '__'
# against '/', escapes against their text, dots, non-ASCII, the empty string.
TRICKY = ["main", "v1/x", "v1_x", "v1 x", "v1__x", "v1/_x", "v1_/x", "v1//x", "refs/pr/3", "refs_pr_3",
          "refs__pr__3", "refs/pr/3 ", "_2f", "_5f", "/", "_", "", ".", "..", ".x", "_2ex", "-rf", "a@b", "a%2Fb",
          "$(touch x)", "é", "e\u0301", "v1\nx"]


def test_slugs_are_injective_single_path_components():
    """Two (id, revision) pairs never share a prefetched directory (refs/pr/3 once read the weights
    of refs_pr_3), and every slug is one readable path component."""
    assert weights_slug("org/name", "v1.0") == "org__name@v1.0"
    assert weights_slug("org/name", "refs/pr/3") == "org__name@refs__pr__3"
    pairs = [(i, r) for i in ["org/name", "org_/name", "org/_name", "org__name", "../../etc", "a@b/c", "a/b@c"]
             for r in TRICKY]
    slugs = [weights_slug(i, r) for i, r in pairs]
    assert len(set(slugs)) == len(pairs)
    for slug in slugs:
        assert re.fullmatch(r"[A-Za-z0-9._@-]+", slug) and slug not in (".", "..") and not slug.startswith("."), slug
