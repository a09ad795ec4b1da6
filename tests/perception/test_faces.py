"""The ArcFace face-identity backend (perception/faces.py) through the files a real run loads.

No weights are downloaded: the detector is a tiny ONNX graph with YuNet's contract (input
``input``, outputs cls/obj/bbox/kps at strides 8, 16, 32) whose outputs place chosen faces on the
grid, decoded by OpenCV's own FaceDetectorYN; the recogniser is a tiny ONNX graph with ArcFace's
contract ((N, 3, 112, 112) -> (N, D)) that average-pools its input over 56 x 56 blocks, so every
embedding can be computed here from the aligned crop.
"""

import numpy as np
import pytest
from worldmemory.perception import registry
from worldmemory.perception.face_detections import FaceDetections
from worldmemory.perception.faces import ARCFACE_TEMPLATE, ArcFaceIdentity, alignment

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SIZE = 128  # the detector graph's (padded) input; frames of up to 128 x 128 pad to it


def yunet_graph(path, faces, size=SIZE, blue_gate=False):
    """A detector with YuNet's outputs for a size x size input: each face (stride, row, col,
    score, (x, y, w, h) box, (5, 2) landmarks) written into its grid cell, as YuNet encodes it.
    With ``blue_gate`` the class scores are multiplied by the mean of input channel 0 / 255, which
    is blue in the BGR order YuNet is fed."""
    nodes = [helper.make_node("ReduceMean", ["input"], ["mean"], keepdims=0, axes=[1, 2, 3]),
             helper.make_node("Mul", ["mean", "zero"], ["z"]),  # outputs depend on the input, by 0
             helper.make_node("Slice", ["input", "c0", "c1", "axis"], ["channel0"]),
             helper.make_node("ReduceMean", ["channel0"], ["level"], keepdims=0, axes=[1, 2, 3]),
             helper.make_node("Mul", ["level", "gain"], ["gate"])]
    gain = 1 / 255 if blue_gate else 0.0
    inits = [numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
             numpy_helper.from_array(np.array([gain], np.float32), "gain"),
             *(numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("c0", 0), ("c1", 1), ("axis", 1)))]
    outputs = []
    grids = {}
    for stride in (8, 16, 32):
        n = (size // stride) ** 2
        grids[stride] = {"cls": np.zeros((1, n, 1)), "obj": np.zeros((1, n, 1)),
                         "bbox": np.zeros((1, n, 4)), "kps": np.zeros((1, n, 10))}
    for stride, row, col, score, (x, y, w, h), landmarks in faces:
        g, idx = grids[stride], row * (size // stride) + col
        g["cls"][0, idx] = g["obj"][0, idx] = score  # YuNet's score is sqrt(cls * obj)
        g["bbox"][0, idx] = [(x + w / 2) / stride - col, (y + h / 2) / stride - row,
                             np.log(w / stride), np.log(h / stride)]
        g["kps"][0, idx] = (np.asarray(landmarks) / stride - [col, row]).ravel()
    for kind in ("cls", "obj", "bbox", "kps"):
        for stride in (8, 16, 32):
            name, value = f"{kind}_{stride}", grids[stride][kind].astype(np.float32)
            inits.append(numpy_helper.from_array(value, f"{name}_const"))
            gated = kind == "cls" and blue_gate
            node = ("Mul", "gate") if gated else ("Add", "z")
            nodes.append(helper.make_node(node[0], [f"{name}_const", node[1]], [name]))
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape)))
    graph = helper.make_graph(nodes, "yunet-contract",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
                              outputs, inits)
    save(graph, path)
    return path


def pooling_recogniser(path, crop=112):
    """An ArcFace-shaped model: the mean of each colour channel over 2 x 2 blocks of the crop (12-d)."""
    nodes = [helper.make_node("AveragePool", ["data"], ["pooled"], kernel_shape=[crop // 2] * 2,
                              strides=[crop // 2] * 2),
             helper.make_node("Flatten", ["pooled"], ["fc1"])]
    graph = helper.make_graph(nodes, "arcface-contract",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, crop, crop])],
                              [helper.make_tensor_value_info("fc1", TensorProto.FLOAT, ["N", 12])])
    save(graph, path)
    return path


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def expected_embedding(crop):
    """What the pooling recogniser gives for an RGB uint8 crop: (x - 127.5) / 127.5, 2 x 2 means, CHW order."""
    x = (crop.astype(np.float64) - 127.5) / 127.5
    h = crop.shape[0] // 2
    return np.array([[x[i * h:(i + 1) * h, j * h:(j + 1) * h, c].mean() for i in range(2) for j in range(2)]
                     for c in range(3)]).ravel()


@pytest.fixture
def recogniser(tmp_path):
    return pooling_recogniser(tmp_path / "rec.onnx")


def test_detection_decodes_yunet_at_the_frame_size_and_the_face_is_embedded_from_its_aligned_crop(tmp_path, recogniser):
    """A 120 x 100 frame is padded to the detector's 128 x 128 by OpenCV; the face whose landmarks
    are ArcFace's template moved by (5, 9) is found with its box, landmarks and score, and its
    embedding is the recogniser on frame[9:121, 5:117] in RGB order (an integer shift aligns
    exactly), so a BGR crop or another normalisation would not match."""
    landmarks = ARCFACE_TEMPLATE + [5.0, 9.0]
    box = (20.0, 30.0, 64.0, 72.0)
    detector = yunet_graph(tmp_path / "det.onnx", [(16, 3, 3, 0.95, box, landmarks)])
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 121, 120, 3), dtype=np.uint8)
    frames[..., 0] //= 2  # channels differ in level: a swap of red and blue changes the embedding
    found = registry.create("faces", "arcface", detector=str(detector), recognizer=str(recogniser)).faces(frames)
    assert found.frame.tolist() == [0, 1]
    np.testing.assert_allclose(found.box, [box] * 2, atol=1e-4)
    np.testing.assert_allclose(found.landmarks, [landmarks] * 2, atol=1e-4)
    np.testing.assert_allclose(found.score, 0.95, atol=1e-6)
    assert found.embedding.shape == (2, 12) and found.embedding.dtype == np.float32
    for t in range(2):
        np.testing.assert_allclose(found.embedding[t], expected_embedding(frames[t, 9:121, 5:117]), atol=2e-5)


def test_the_detector_sees_the_frame_in_opencvs_bgr_order(tmp_path, recogniser):
    """YuNet is trained on OpenCV's BGR images: a detector that finds faces only where its first
    input channel is bright finds one in a blue RGB frame and none in a red one."""
    detector = yunet_graph(tmp_path / "det.onnx", [(8, 2, 2, 0.95, (10, 10, 16, 16), ARCFACE_TEMPLATE / 7 + 10)],
                           blue_gate=True)
    faces = ArcFaceIdentity(str(detector), str(recogniser))
    blue, red = np.zeros((2, 1, 64, 64, 3), np.uint8)
    blue[..., 2], red[..., 0] = 255, 255
    assert len(faces.faces(blue).frame) == 1 and len(faces.faces(red).frame) == 0


def test_faces_below_the_score_threshold_and_frames_without_faces_give_empty_rows(tmp_path, recogniser):
    detector = yunet_graph(tmp_path / "det.onnx", [(8, 2, 2, 0.85, (10, 10, 16, 16), ARCFACE_TEMPLATE / 7 + 10)])
    frames = np.zeros((3, 64, 64, 3), np.uint8)
    strict = ArcFaceIdentity(str(detector), str(recogniser))  # opencv_zoo's threshold, 0.9
    found = strict.faces(frames)
    assert len(found.frame) == 0 and found.embedding.shape == (0, 12) and found.landmarks.shape == (0, 5, 2)
    lenient = ArcFaceIdentity(str(detector), str(recogniser), score_threshold=0.8)
    assert lenient.faces(frames).frame.tolist() == [0, 1, 2]


def test_alignment_takes_the_landmarks_onto_the_template():
    """A face at half the template's size, turned by 30 degrees and moved, is mapped back onto
    the template exactly (the similarity of Umeyama, as insightface's norm_crop)."""
    a = np.radians(30)
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    landmarks = 0.5 * ARCFACE_TEMPLATE @ R.T + [40.0, 7.0]
    M = alignment(landmarks)
    np.testing.assert_allclose(landmarks @ M[:, :2].T + M[:, 2], ARCFACE_TEMPLATE, atol=1e-9)
    np.testing.assert_allclose(alignment(ARCFACE_TEMPLATE * 2, size=224)[:, :2], np.eye(2), atol=1e-12)


def test_on_target_keeps_the_best_scored_face_whose_nose_is_inside_the_mask():
    masks = np.zeros((3, 10, 10), bool)
    masks[:, 2:6, 2:6] = True
    landmarks = np.zeros((4, 5, 2))
    landmarks[:, 2] = [(3.5, 3.5), (4.2, 2.9), (8.0, 8.0), (8.0, 8.0)]  # inside, inside, outside, outside
    faces = FaceDetections(frame=np.array([0, 0, 1, 0]), box=np.zeros((4, 4)), landmarks=landmarks,
                           score=np.array([0.91, 0.97, 0.99, 0.999]), embedding=np.eye(4, dtype=np.float32))
    on = faces.on_target(masks)
    assert sorted(on) == [0]
    np.testing.assert_array_equal(on[0], np.eye(4)[1])
    back = FaceDetections.from_fields(faces.fields())
    np.testing.assert_array_equal(back.on_target(masks)[0], on[0])


def test_missing_models_and_a_recogniser_of_another_contract_fail_naming_them(tmp_path, recogniser):
    detector = yunet_graph(tmp_path / "det.onnx", [])
    with pytest.raises(FileNotFoundError, match=r"recognizer model .*absent\.onnx .*perception\.faces\.recognizer"):
        ArcFaceIdentity(str(detector), str(tmp_path / "absent.onnx"))
    with pytest.raises(FileNotFoundError, match=r"detector model"):
        ArcFaceIdentity(str(tmp_path / "absent.onnx"), str(recogniser))
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "not-arcface",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 512])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 512])])
    save(graph, tmp_path / "other.onnx")
    with pytest.raises(ValueError, match="ArcFace"):
        ArcFaceIdentity(str(detector), str(tmp_path / "other.onnx"))


def test_the_faces_job_embeds_every_frame_of_human_rollouts_only(tmp_path, recogniser):
    """perceive.py's faces capability: one row per face and frame of a human case's video (read
    back from the lossless file), nothing for an object case, stored as perception.store reads it."""
    from worldmemory.common.video import write_video
    from worldmemory.perception.store import load_estimates, save_estimates
    from worldmemory.worldmembench.cases import write_embedded_cases
    from worldmemory.worldmembench.perceive import perceive

    cases = tmp_path / "cases"
    families = {"human": ["LRLR"], "object": ["LRLR"], "environment": ["LRLR"], "dynamic": ["LR-Hold"]}
    write_embedded_cases(cases, 1, 64, 48, families, {"n_frames": 241, "hold_frames": 32, "final_hold_frames": 9})
    root = tmp_path / "rollouts"
    root.mkdir()
    frames = np.random.default_rng(1).integers(0, 256, (5, 48, 64, 3), dtype=np.uint8)
    rollouts = []
    for case in ("human_000", "object_000"):
        write_video(root / f"{case}.mkv", frames, 8.0)
        rollouts.append({"case": case, "trajectory": "LRLR", "video": f"{case}.mkv"})
    (root / "manifest.json").write_text(__import__("json").dumps({"model": "m", "rollouts": rollouts}))
    detector = yunet_graph(tmp_path / "det.onnx", [(8, 1, 2, 0.95, (8, 4, 24, 24), ARCFACE_TEMPLATE / 5 + 4)])
    options = {"detector": str(detector), "recognizer": str(recogniser)}
    estimates = perceive(cases, root, "faces", "arcface", options)
    assert list(estimates) == ["human_000/LRLR"]
    save_estimates(tmp_path / "faces.npz", "arcface", estimates)
    faces = FaceDetections.from_fields(load_estimates(tmp_path / "faces.npz").of("human_000/LRLR"))
    assert faces.frame.tolist() == [0, 1, 2, 3, 4] and faces.embedding.shape == (5, 12)
    crop = ArcFaceIdentity(str(detector), str(recogniser)).crop(frames[3], faces.landmarks[3])
    np.testing.assert_allclose(faces.embedding[3], expected_embedding(crop), atol=2e-5)
