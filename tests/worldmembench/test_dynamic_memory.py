import math

import numpy as np
import pytest
from worldmemory.worldmembench.metrics.dynamic_memory import (
    ASPECTS,
    DynamicCase,
    JudgeAnswer,
    OracleEventJudge,
    Question,
    decomposition,
    event_predicates,
    judge_frames,
    phase_ranges,
    score_case,
)
from worldmemory.worldmembench.trajectories import rotation

# Two questions per aspect; one reference of each pair is False so that answering the negation
# (not just "no") is what the oracle must get right.
QUESTIONS = tuple(
    Question(f"{aspect}_{i}", aspect, f"question {i} on {aspect}", reference=(i == 1))
    for aspect in ASPECTS for i in (1, 2))
CASE = DynamicCase("melting_ice", "an ice cube on a plate", "the ice melts",
                   "a puddle of water on the plate", QUESTIONS)


def answers(wrong=()):
    """Answers matching every reference except the question ids in wrong."""
    return {q.id: q.reference != (q.id in wrong) for q in QUESTIONS}


# Appendix D.1 frame sampling and phase ranges


def test_judge_frames_stride_eight_with_first_and_last():
    assert judge_frames(17) == [0, 8, 16]
    assert judge_frames(20) == [0, 8, 16, 19]
    assert judge_frames(1) == [0]


def test_judge_frames_rejects_empty_rollout():
    with pytest.raises(ValueError):
        judge_frames(0)


def test_phase_ranges_name_label_and_tile_the_rollout():
    trajectory = rotation("LRLR")
    ranges = phase_ranges(trajectory)
    assert [(r["name"], r["label"]) for r in ranges] == [
        ("V", "initial hold"), ("D1", "departure 1"), ("R1", "return 1"),
        ("D2", "departure 2"), ("R2", "return 2"), ("H", "final hold")]
    # end is exclusive: each phase starts where the previous one ended.
    assert ranges[0]["start"] == 0 and ranges[-1]["end"] == trajectory.n_frames
    assert all(a["end"] == b["start"] for a, b in zip(ranges, ranges[1:]))
    assert (ranges[0]["start"], ranges[0]["end"]) == (0, 64)


# Section 4.5 gated scoring


def test_not_started_scores_zero_even_with_correct_answers():
    scores = score_case(JudgeAnswer(False, answers()), QUESTIONS)
    assert scores["started"] is False
    assert scores["overall"] == 0.0
    assert all(scores[aspect] == 0.0 for aspect in ASPECTS)
    assert set(scores["questions"].values()) == {0}


def test_all_correct_scores_one():
    scores = score_case(JudgeAnswer(True, answers()), QUESTIONS)
    assert scores["started"] is True
    assert scores["overall"] == 1.0
    assert all(scores[aspect] == 1.0 for aspect in ASPECTS)


def test_one_wrong_answer_halves_its_aspect():
    scores = score_case(JudgeAnswer(True, answers(wrong={"return_progress_2"})), QUESTIONS)
    assert scores["return_progress"] == 0.5
    assert scores["persistence_reset"] == scores["final_state"] == scores["causal_physical"] == 1.0
    assert scores["overall"] == 7 / 8
    assert scores["questions"]["return_progress_2"] == 0


@pytest.mark.parametrize("questions", [
    QUESTIONS[:-1],  # seven questions
    QUESTIONS[:-1] + (Question("extra", "final_state", "?", True),),  # three vs one
    QUESTIONS[:-1] + (Question("return_progress_1", "causal_physical", "?", True),),  # dup id
    QUESTIONS[:-1] + (Question("x", "style", "?", True),),  # unknown aspect
])
def test_checklist_must_be_two_questions_per_aspect(questions):
    with pytest.raises(ValueError):
        score_case(JudgeAnswer(True, {q.id: q.reference for q in questions}), questions)
    with pytest.raises(ValueError):
        DynamicCase("c", "a", "b", "c", questions)


def test_answers_must_cover_the_checklist():
    partial = answers()
    del partial["final_state_1"]
    with pytest.raises(ValueError):
        score_case(JudgeAnswer(True, partial), QUESTIONS)


# Appendix D.2 / Table 5 decomposition


def case_scores(started, overall):
    return {"started": started, "overall": overall}


def test_decomposition_gated_is_start_rate_times_conditional():
    result = decomposition([case_scores(True, 1.0), case_scores(True, 0.5),
                            case_scores(False, 0.0), case_scores(False, 0.0)])
    assert result == {"n": 4, "started": 2, "p_start": 0.5, "S_cond": 0.75, "S_gated": 0.375}
    assert result["S_gated"] == result["p_start"] * result["S_cond"]


def test_decomposition_without_started_events():
    result = decomposition([case_scores(False, 0.0)] * 3)
    assert result["started"] == 0 and result["p_start"] == 0.0
    assert math.isnan(result["S_cond"])
    assert result["S_gated"] == 0.0


def test_decomposition_of_score_case_outputs():
    scored = [score_case(JudgeAnswer(s, answers(wrong)), QUESTIONS)
              for s, wrong in [(True, ()), (True, {"final_state_1"}), (False, ())]]
    result = decomposition(scored)
    assert result["S_cond"] == pytest.approx((1 + 7 / 8) / 2)
    assert result["S_gated"] == pytest.approx(result["p_start"] * result["S_cond"], abs=1e-12)


def test_decomposition_rejects_ungated_scores():
    with pytest.raises(ValueError):
        decomposition([case_scores(False, 0.5)])
    with pytest.raises(ValueError):
        decomposition([])


# Oracle judge on ground-truth event state, LR-Hold (V 0-63, D1 64-165, R1 166-267, H 268-492)

TRAJECTORY = rotation("LR-Hold")
N = TRAJECTORY.n_frames
LEAVE, RETURN = 64, 267
CHECKLIST = [("return_progress", "advanced_while_away"), ("return_progress", "back_to_initial"),
             ("persistence_reset", "kept_after_return"), ("persistence_reset", "reset_after_return"),
             ("final_state", "complete_at_end"), ("final_state", "initial_at_end"),
             ("causal_physical", "gradual"), ("causal_physical", "reversed")]


def ramp(t0, t1, t=np.arange(N)):
    """Progress 0 until t0, rising linearly to 1 at t1, then 1."""
    return np.clip((t - t0) / (t1 - t0), 0.0, 1.0)


TRUE_EVENT = ramp(4, 400)  # the world's event: starts in V, advances while away, completes
TRUTH = event_predicates(TRUE_EVENT, LEAVE, RETURN)
ORACLE_CASE = DynamicCase("filling", "empty", "liquid pours in", "full", tuple(
    Question(f"q{i}", aspect, predicate, TRUTH[predicate], predicate)
    for i, (aspect, predicate) in enumerate(CHECKLIST)))


def states(progress, start=4):
    """Per-frame states: started from frame `start`, progress[t] as given."""
    return [{"started": t >= start, "progress": float(p)} for t, p in enumerate(progress)]


def oracle_scores(event_states, case=ORACLE_CASE):
    frames = judge_frames(N)
    answer = OracleEventJudge(event_states).judge(
        [np.zeros((2, 2))] * len(frames), frames, phase_ranges(TRAJECTORY), case)
    return score_case(answer, case.questions)


def test_predicates_of_the_true_event():
    assert TRUTH == {"advanced_while_away": True, "back_to_initial": False, "kept_after_return": True,
                     "reset_after_return": False, "complete_at_end": True, "initial_at_end": False,
                     "gradual": True, "reversed": False}


def test_oracle_on_the_true_event_scores_one():
    assert oracle_scores(states(TRUE_EVENT))["overall"] == 1.0


def test_oracle_event_that_never_starts_scores_zero():
    scores = oracle_scores([{"started": False, "progress": 0.0}] * N)
    assert scores["started"] is False and scores["overall"] == 0.0


def test_oracle_event_starting_only_after_the_hold_fails_the_gate():
    scores = oracle_scores(states(ramp(100, 400), start=100))
    assert scores["started"] is False and scores["overall"] == 0.0


def test_oracle_event_reset_on_return():
    # The amnesic reference model: the event restarts from its initial state when it comes back
    # into view (frame 240) and does not complete by the end.
    progress = TRUE_EVENT.copy()
    progress[240:] = ramp(240, 640)[240:]
    scores = oracle_scores(states(progress))
    assert scores["started"] is True
    assert scores["return_progress"] == 0.5  # lower at the return than when it left; not at 0 either
    assert scores["persistence_reset"] == 1.0  # after the return it only rises
    assert scores["final_state"] == 0.5  # not complete at the end (still not back to the start)
    assert scores["causal_physical"] == 0.0  # a jump back: neither gradual nor monotone
    assert scores["overall"] == 0.5


def test_oracle_event_frozen_while_out_of_view():
    progress = TRUE_EVENT.copy()
    progress[LEAVE:RETURN + 1] = progress[LEAVE]
    progress[RETURN + 1:] = np.maximum(progress[LEAVE], ramp(RETURN, 480)[RETURN + 1:])
    scores = oracle_scores(states(progress))
    assert scores["return_progress"] == 0.5  # did not advance while away
    assert scores["persistence_reset"] == scores["final_state"] == 1.0


def test_oracle_needs_a_predicate_for_every_question():
    case = DynamicCase("c", "a", "b", "c", tuple(
        Question(q.id, q.aspect, q.text, q.reference) for q in ORACLE_CASE.questions))
    with pytest.raises(ValueError, match="predicate"):
        oracle_scores(states(TRUE_EVENT), case)


def test_oracle_gate_only_sees_sampled_frames_of_the_hold():
    # Marked started only at frame 63, between judge frames 56 and 64 (64 is already D1).
    scores = oracle_scores(states(ramp(63, 400), start=63))
    assert scores["started"] is False
