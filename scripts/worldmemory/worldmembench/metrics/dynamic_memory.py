"""Dynamic Memory of WorldMemBench (Section 4.5; Appendix D.1-D.3, Table 5).

A case specifies an initial state, an action and an expected next state, plus a frozen checklist
of eight binary questions with reference answers, two for each of the four aspects (ASPECTS). A
judge sees the rollout sampled every 8 frames (first and last always included) with the planned
camera-phase ranges, decides whether the event visibly starts during the initial hold V, and
answers the eight questions. The start decision gates the score: if the event did not start,
every question scores 0; otherwise a question scores 1 when the answer matches its reference.

The paper's judge is a VLM (Qwen3.8-27B): worldmembench.perceive.VlmEventJudge asks any backend
of worldmemory.perception.judge (prompt and reply format there) and caches its answers;
:class:`OracleEventJudge` answers from ground-truth event state, so the scoring is calibrated end
to end on reference models.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from worldmemory.worldmembench.trajectories import Trajectory

ASPECTS = ("return_progress", "persistence_reset", "final_state", "causal_physical")
QUESTIONS_PER_ASPECT = 2
JUDGE_STRIDE = 8  # Appendix D.1
ITEM = "dyn_item"  # score rows of one checklist item's gated 0/1 (target: the question's id)


@dataclass(frozen=True)
class Question:
    """One frozen checklist item (Section 4.5): binary, with a fixed reference answer.

    ``predicate`` names the machine-checkable statement (PREDICATES) behind the question where the
    case has one (the embedded default's cases): the oracle judge answers it from event state.
    """

    id: str
    aspect: str
    text: str
    reference: bool
    predicate: str | None = None


@dataclass(frozen=True)
class DynamicCase:
    """A dynamic-memory case: the event (initial state, action, expected next state) and its
    eight-question checklist (Section 4.5). Construction checks the checklist's shape."""

    case_id: str
    initial_state: str
    action: str
    expected_next_state: str
    questions: tuple[Question, ...]

    def __post_init__(self):
        check_questions(self.questions)


@dataclass(frozen=True)
class JudgeAnswer:
    """What a judge returns: the event-start decision and a yes/no answer per question id."""

    started: bool
    answers: dict[str, bool]


class EventJudge(Protocol):
    """The assessment model of Appendix D.1.

    frames are the sampled frames in chronological order, frame_indices their indices in the
    rollout (judge_frames), phases the planned camera phases (phase_ranges). The judge decides
    whether the event visibly starts during the initial hold, then answers every question of the
    case's checklist.
    """

    def judge(self, frames: Sequence[np.ndarray], frame_indices: Sequence[int],
              phases: Sequence[dict], case: DynamicCase) -> JudgeAnswer: ...


def dynamic_case(case: dict) -> DynamicCase:
    """The DynamicCase of a dynamic case's case.json (case.schema.yaml)."""
    questions = tuple(Question(q["id"], q["aspect"], q["question"], q["reference_answer"],
                               q.get("predicate")) for q in case["questions"])
    return DynamicCase(case["id"], case["initial_state"], case["action"], case["expected_next_state"],
                       questions)


def check_questions(questions: Sequence[Question]) -> None:
    """ValueError unless the checklist is eight questions with unique ids, two per aspect."""
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ValueError(f"question ids must be unique, got {ids}")
    counts = Counter(q.aspect for q in questions)
    expected = {aspect: QUESTIONS_PER_ASPECT for aspect in ASPECTS}
    if counts != expected:
        raise ValueError(f"need {QUESTIONS_PER_ASPECT} questions for each of {ASPECTS}, "
                         f"got {dict(counts)}")


def judge_frames(n_frames: int) -> list[int]:
    """Frames shown to the judge (Appendix D.1): stride 8 from frame 0, plus the last frame."""
    if n_frames < 1:
        raise ValueError("a rollout needs at least one frame")
    return sorted(set(range(0, n_frames, JUDGE_STRIDE)) | {n_frames - 1})


def phase_ranges(trajectory: Trajectory) -> list[dict]:
    """The planned camera-phase ranges given to the judge (Appendix D.1).

    One dict per phase: name ('V', 'D1', 'R1', ..., 'H'), start, end and a label ('initial
    hold', 'departure k', 'return k', 'final hold'). end is EXCLUSIVE, as in Phase: the phase
    covers frames start..end-1; a prompt that prints inclusive ranges must print end - 1.
    """
    labels = {"V": "initial hold", "D": "departure", "R": "return", "H": "final hold"}
    ranges = []
    for phase in trajectory.phases:
        kind, k = phase.name[0], phase.name[1:]
        label = f"{labels[kind]} {k}" if k else labels[kind]
        ranges.append({"name": phase.name, "start": phase.start, "end": phase.end, "label": label})
    return ranges


def judge_rollout(judge: EventJudge, frames, trajectory: Trajectory, case: DynamicCase) -> JudgeAnswer:
    """``judge``'s answer for a rollout, shown as Appendix D.1 says: the frames of judge_frames, with
    their indices and the planned phases of ``trajectory``."""
    shown = judge_frames(len(frames))
    return judge.judge([frames[i] for i in shown], shown, phase_ranges(trajectory), case)


PREDICATES = ("advanced_while_away", "back_to_initial", "kept_after_return", "reset_after_return",
              "complete_at_end", "initial_at_end", "gradual", "reversed")


def event_predicates(progress, leave: int, ret: int) -> dict[str, bool]:
    """Truth of each checklist predicate for an event's per-frame progress along a trajectory.

    ``leave`` is the first frame of D1 (the camera turns away), ``ret`` the last frame of R1 (it is
    back, Section 3.3). Progress 0 is the initial state, 1 the expected next state. The same
    function gives a case's reference answers (on the world's true event) and the oracle judge's
    answers (on the event a model drew), so a model that draws the true event scores 1.
    """
    p = np.asarray(progress, dtype=float)
    step = np.diff(p)
    return {
        "advanced_while_away": bool(p[ret] > p[leave]),
        "back_to_initial": bool(p[ret] == p[0]),
        "kept_after_return": bool(np.all(p[ret:] >= p[ret])),
        "reset_after_return": bool(np.any(p[ret:] < p[ret])),
        "complete_at_end": bool(p[-1] == 1.0),
        "initial_at_end": bool(p[-1] == p[0]),
        "gradual": bool(np.abs(step).max() <= 0.05),  # no frame changes it by over 5 %
        "reversed": bool(np.any(step < 0)),
    }


class OracleEventJudge:
    """A judge that reads ground-truth event state instead of pixels (reference models only).

    ``states`` has one dict per rollout frame, {"started": bool, "progress": float}, of the event
    the model drew. The start gate looks, like the VLM, at the sampled frames inside V. Each
    question is answered by evaluating its predicate (:func:`event_predicates`) on the drawn
    progress of every frame: the oracle is exact, where the VLM sees only the sampled frames.
    Questions without a predicate (user cases) cannot be answered by the oracle.
    """

    def __init__(self, states: Sequence[dict]):
        self.states = list(states)

    def judge(self, frames: Sequence[np.ndarray], frame_indices: Sequence[int],
              phases: Sequence[dict], case: DynamicCase) -> JudgeAnswer:
        if len(frames) != len(frame_indices):
            raise ValueError("need one frame index per frame")
        missing = [q.id for q in case.questions if q.predicate not in PREDICATES]
        if missing:
            raise ValueError(f"case {case.case_id}: questions {missing} have no predicate the oracle can check")
        by_name = {p["name"]: p for p in phases}
        started = any(self.states[i]["started"] for i in frame_indices if i < by_name["V"]["end"])
        progress = [float(s["progress"]) for s in self.states]
        truth = event_predicates(progress, by_name["D1"]["start"], by_name["R1"]["end"] - 1)
        return JudgeAnswer(started=started, answers={q.id: truth[q.predicate] for q in case.questions})


def score_case(answer: JudgeAnswer, questions: Sequence[Question]) -> dict:
    """Gated checklist scores of one case (Section 4.5, Appendix D.1).

    Returns 'started', 'questions' (question id -> gated 0/1), one mean per aspect in ASPECTS
    (its two gated scores) and 'overall' (mean of all eight). A judge answer that misses a
    question or answers one not on the checklist is an error, not a silent zero.
    """
    check_questions(questions)
    if set(answer.answers) != {q.id for q in questions}:
        raise ValueError("the judge must answer exactly the checklist's questions")
    gated = {q.id: int(answer.started and answer.answers[q.id] == q.reference) for q in questions}
    scores = {"started": bool(answer.started), "questions": gated}
    for aspect in ASPECTS:
        scores[aspect] = float(np.mean([gated[q.id] for q in questions if q.aspect == aspect]))
    scores["overall"] = float(np.mean(list(gated.values())))
    return scores


def decomposition(case_scores: Sequence[dict]) -> dict:
    """Event-start decomposition of Appendix D.2 / Table 5 over one model's cases.

    p_start: fraction of cases judged started; S_cond: mean overall over started cases (NaN when
    none started); S_gated: mean overall over all cases, the reported Dynamic Memory Overall.
    Because a negative gate scores 0, S_gated = p_start * S_cond; this is checked, so scores of a
    non-started case that are not 0 (not produced by score_case) raise ValueError.
    """
    if not case_scores:
        raise ValueError("no cases to decompose")
    n = len(case_scores)
    if any(not s["started"] and s["overall"] != 0 for s in case_scores):
        raise ValueError("a case whose event did not start must have overall 0")
    started = [s["overall"] for s in case_scores if s["started"]]
    p_start = len(started) / n
    s_cond = float(np.mean(started)) if started else math.nan
    s_gated = float(np.mean([s["overall"] for s in case_scores]))
    if started and not math.isclose(s_gated, p_start * s_cond, rel_tol=0, abs_tol=1e-12):
        raise ValueError(f"S_gated {s_gated} != p_start * S_cond {p_start * s_cond}")
    return {"n": n, "started": len(started), "p_start": p_start, "S_cond": s_cond,
            "S_gated": s_gated}
