"""What a user sees at the prompt: an axis prints as the tally.axis call that makes it (which
evaluates back to an equal axis where its edges are not abridged), a plan as the planner's
description while staying the dict of its fields."""

import numpy as np
import pytest

import tally


# Made in the test (not kept by pytest's parameters past nanobind's leak check at exit).
@pytest.mark.parametrize("make, text", [
    (lambda: tally.axis.regular(10, 0, 1), "tally.axis.regular(10, 0.0, 1.0)"),
    (lambda: tally.axis.regular(3, -2.5, 0.1, "f32"), "tally.axis.regular(3, -2.5, 0.1, edge_type='f32')"),
    (lambda: tally.axis.integer(-2, 5), "tally.axis.integer(-2, 5)"),
    (lambda: tally.axis.variable([0, 1, 3.5]), "tally.axis.variable([0.0, 1.0, 3.5])"),
])
def test_an_axis_prints_as_the_call_that_makes_it(make, text):
    axis = make()
    assert repr(axis) == text
    assert eval(text, {"tally": tally}) == axis


def test_many_edges_are_abridged_with_the_bin_count():
    axis = tally.axis.variable(np.linspace(0, 1, 101))
    assert repr(axis) == "tally.axis.variable([0.0, 0.01, 0.02, ..., 0.98, 0.99, 1.0])  # 100 bins"


def test_a_plan_prints_its_description_and_is_a_dict():
    x = np.random.default_rng(1).random(1000)
    for p in (tally.plan(x, bins=64), tally.Histogram(tally.axis.regular(64, 0, 1)).plan(np.float64, 1000)):
        assert isinstance(p, dict)
        text = repr(p)
        assert text.startswith("tally plan:\nbackend    cpu\nstrategy   " + p["strategy"] + "\n")
        assert all(reason in text for reason in p["reasons"]) and p["reasons"]
