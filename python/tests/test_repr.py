"""What a user sees at the prompt: an axis prints as the tally.axis call that makes it (which
evaluates back to an equal axis where its edges are not abridged), a plan as the planner's
description while staying the dict of its fields, a histogram as its constructor's call and its
totals, with text bars (str), an SVG in a notebook and matplotlib plots."""

import re

import numpy as np
import pytest

import tally


# Made in the test (not kept by pytest's parameters past nanobind's leak check at exit).
@pytest.mark.parametrize("make, text", [
    (lambda: tally.axis.regular(10, 0, 1), "tally.axis.Regular(10, 0.0, 1.0)"),
    (lambda: tally.axis.regular(3, -2.5, 0.1, "f32"), "tally.axis.Regular(3, -2.5, 0.1, edge_type='f32')"),
    (lambda: tally.axis.integer(-2, 5), "tally.axis.Integer(-2, 5)"),
    (lambda: tally.axis.variable([0, 1, 3.5]), "tally.axis.Variable([0.0, 1.0, 3.5])"),
])
def test_an_axis_prints_as_the_call_that_makes_it(make, text):
    axis = make()
    assert repr(axis) == text
    assert eval(text, {"tally": tally}) == axis


def test_many_edges_are_abridged_with_the_bin_count():
    axis = tally.axis.variable(np.linspace(0, 1, 101))
    assert repr(axis) == "tally.axis.Variable([0.0, 0.01, 0.02, ..., 0.98, 0.99, 1.0])  # 100 bins"


def test_a_plan_prints_its_description_and_is_a_dict():
    x = np.random.default_rng(1).random(1000)
    for p in (tally.plan(x, bins=64), tally.Histogram(tally.axis.regular(64, 0, 1)).plan(np.float64, 1000)):
        assert isinstance(p, dict)
        text = repr(p)
        assert text.startswith("tally plan:\nbackend    cpu\nstrategy   " + p["strategy"] + "\n")
        assert all(reason in text for reason in p["reasons"]) and p["reasons"]


def test_a_histogram_prints_the_call_that_makes_it_and_its_totals():
    rng = np.random.default_rng(3)
    x = rng.normal(size=500)
    h = tally.Histogram(tally.axis.regular(8, -2, 2), flow=True).fill(x)
    inside = int(((x >= -2) & (x <= 2)).sum())
    assert repr(h) == f"tally.Histogram(tally.axis.Regular(8, -2.0, 2.0), flow=True)  # samples 500, sum {inside}"
    made = eval(repr(h).split("  #")[0], {"tally": tally})
    assert made.axes[0] == h.axes[0] and made.sum() == 0 and made.flow["underflow"] == 0
    cases = [
        (tally.Histogram([tally.axis.integer(0, 3), tally.axis.variable([0, 1, 3.5])], storage="weight",
                         device="cpu"),
         "tally.Histogram([tally.axis.Integer(0, 3), tally.axis.Variable([0.0, 1.0, 3.5])], storage='weight', "
         "device='cpu')  # samples 0, sum 0.0"),
        (tally.Histogram(tally.axis.integer(0, 4), channels=3, count_bits=32),
         "tally.Histogram(tally.axis.Integer(0, 4), channels=3, count_bits=32)  # samples 0, sum [0, 0, 0]"),
        (tally.Histogram(tally.axis.integer(0, 4), weighted=True, exact_sums=True),
         "tally.Histogram(tally.axis.Integer(0, 4), weighted=True, exact_sums=True)  # samples 0, sum 0.0"),
    ]
    for made, text in cases:
        assert repr(made) == text


def test_str_draws_text_bars_and_html_an_svg():
    h = tally.Histogram(tally.axis.regular(4, 0, 1)).fill(np.array([0.1, 0.3, 0.35, 0.4, 0.99]))
    lines = str(h).splitlines()
    assert lines[0] == repr(h)
    assert lines[1:] == ["[0, 0.25)   1 " + "\u2588" * 13,
                         "[0.25, 0.5) 3 " + "\u2588" * 40,
                         "[0.5, 0.75) 0",
                         "[0.75, 1]   1 " + "\u2588" * 13]
    html = h._repr_html_()
    assert html.count("<rect") == 4 + 1 and "<svg" in html and ">0</text>" in html and ">1</text>" in html
    heights = [float(v) for v in re.findall(r'height="([0-9.]+)" fill="#3b6ea8"', html)]
    assert heights == pytest.approx([140 / 3, 140, 0, 140 / 3], abs=0.01)  # in proportion, the tallest 150 - 10
    two = tally.Histogram([tally.axis.integer(0, 3), tally.axis.integer(0, 2)]).fill(np.array([0, 2]), np.array([1, 1]))
    assert two._repr_html_().count("<rect") == 6 + 1 and str(two) == repr(two)
    rgb = tally.Histogram(tally.axis.integer(0, 4), channels=3)
    assert "<svg" not in rgb._repr_html_() and "&lt;" not in rgb._repr_html_()


def test_plots_draw_the_values_over_the_edges():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rng = np.random.default_rng(4)
    h = tally.Histogram(tally.axis.variable([0, 0.1, 0.5, 0.6, 1])).fill(rng.random(300))
    fig, ax = plt.subplots()
    steps = h.plot(ax=ax)
    data = steps.get_data()
    assert np.array_equal(data.values, h.values()) and np.array_equal(data.edges, h.axes[0].edges)
    g = tally.Histogram([tally.axis.regular(3, 0, 1), tally.axis.integer(0, 2)]).fill(rng.random(50), rng.integers(0, 2, 50))
    mesh = g.plot2d(ax=ax)
    assert np.array_equal(np.asarray(mesh.get_array()).reshape(2, 3), g.values().T)
    with pytest.raises(ValueError, match="plot2d"):
        g.plot()
    with pytest.raises(ValueError, match="plot draws one"):
        h.plot2d()
    plt.close(fig)
