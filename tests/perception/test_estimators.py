"""Estimator entries of the config: a name or a mapping, its weights, its job's resources."""

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


def test_slugs_are_single_path_components():
    assert weights_slug("org/name", "v1.0") == "org__name@v1.0"
    assert "/" not in weights_slug("org/../../etc", "../x") and not weights_slug("org/a", "b").startswith(".")
