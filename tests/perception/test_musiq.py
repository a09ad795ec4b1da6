"""MUSIQ-SPAQ through pyiqa (perception.musiq) on a random-weight model of the real architecture:
pyiqa builds MUSIQ without its weights, the test saves that state dict as the weights file, and
the backend loads it through pyiqa's own loader. No network: pyiqa is never left without a path."""

import numpy as np
import pytest
from worldmemory.perception import registry

pytestmark = pytest.mark.torchvision


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(pyiqa's random-weight MUSIQ-SPAQ metric, its state dict saved as a file)."""
    import pyiqa
    import torch

    torch.manual_seed(0)
    metric = pyiqa.create_metric("musiq-spaq", pretrained=False, device="cpu")
    path = tmp_path_factory.mktemp("musiq") / "musiq_spaq_random.pth"
    torch.save(metric.net.state_dict(), path)
    return metric, path


def frames(n, h, w, seed=1):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def test_the_weights_load_through_pyiqa_and_score_as_pyiqa_does(reference):
    import torch

    metric, path = reference
    musiq = registry.create("imaging_quality", "musiq-spaq", weights=str(path))
    loaded, saved = musiq.metric.net.state_dict(), metric.net.state_dict()
    assert loaded.keys() == saved.keys() and all(torch.equal(loaded[k], saved[k]) for k in saved)
    video = frames(2, 96, 128)  # the embedded default's size: no resize
    expected = [float(metric(torch.from_numpy(f).permute(2, 0, 1)[None].float() / 255)) for f in video]
    np.testing.assert_allclose(musiq.score(video), expected, rtol=1e-5)


def test_a_frame_longer_than_512_is_scored_at_512_as_vbench_does(reference):
    """520 x 60 -> 512 x 59 (int() of 60 * 512 / 520 = 59.08) by torchvision's bilinear resize of the
    uint8 frame, no antialiasing (a thin frame: few patches to score)."""
    import torch
    from torchvision.transforms.functional import resize

    metric, path = reference
    musiq = registry.create("imaging_quality", "musiq-spaq", weights=str(path))
    frame = frames(1, 60, 520)[0]
    assert tuple(musiq.pixels(frame).shape) == (1, 3, 59, 512)
    small = resize(torch.from_numpy(frame).permute(2, 0, 1)[None], [59, 512], antialias=False).float() / 255
    np.testing.assert_allclose(musiq.score(frame[None]), [float(metric(small))], rtol=1e-5)


def test_a_file_of_another_model_or_none_is_refused_by_name(tmp_path):
    import torch

    other = tmp_path / "head.pth"
    torch.save({"weight": torch.zeros(1, 768), "bias": torch.zeros(1)}, other)
    with pytest.raises(ValueError, match=r"head\.pth is not a MUSIQ-SPAQ state dict.*musiq_spaq_ckpt"):
        registry.create("imaging_quality", "musiq-spaq", weights=str(other))
    with pytest.raises(FileNotFoundError, match=r"missing\.pth do not exist.*musiq_spaq_ckpt"):
        registry.create("imaging_quality", "musiq-spaq", weights=str(tmp_path / "missing.pth"))


def test_a_video_mean_is_normalised_as_vbench():
    scorer = registry.backend_class("imaging_quality", "musiq-spaq")
    assert scorer.normalise(55.0) == pytest.approx(0.55) and scorer.normalise(120.0) == 1.0
