import tally as bh

# Profiles and persistence, written for boost-histogram: the mean jet response against jet pT
# (Mean storage), a weighted profile (WeightedMean storage) and a 2-D profile over an Integer
# and a Boolean axis, filled with `sample=`; read through views, cells and sums; labelled,
# pickled, copied, compared, merged and reset. It runs on tally with its first line changed
# from `import boost_histogram as bh` (examples/boost/README.md).

import copy
import pickle

import numpy as np


def show(label, x):
    """Print a number or an array the same way on every run: integers exactly, floats to 6 decimals."""
    a = np.asarray(x)
    if a.dtype.kind in "iub":
        text = repr(a.tolist())
    else:
        text = np.array2string(a, precision=6, floatmode="fixed", separator=", ", threshold=10**6,
                               max_line_width=100)
    print(f"{label}: {text}")


rng = np.random.default_rng(5)
n = 6000
pt = rng.uniform(20.0, 200.0, n)
# The response on a grid of 1/64 (as a calibration stored in fixed point would give it).
response = np.round(rng.normal(1.0 - 2.0 / np.sqrt(pt), 0.08) * 64) / 64
weight = rng.integers(2, 9, n) / 4
vertices = rng.integers(0, 12, n)
barrel = rng.random(n) < 0.6

profile = bh.Histogram(bh.axis.Regular(9, 20.0, 200.0), storage=bh.storage.Mean(), metadata={"sample": "ttbar"})
profile.axes[0].label = "jet pT [GeV]"
half = n // 2
profile.fill(pt[:half], sample=response[:half]).fill(pt[half:], sample=response[half:])

print("kind is MEAN:", profile.kind == "MEAN", "label:", profile.axes[0].label, "metadata:", profile.metadata)
show("edges", profile.axes[0].edges)
show("centers", profile.axes[0].centers)
show("widths", profile.axes[0].widths)
view = profile.view()
show("counts", view.count)
show("means", view.value)
show("sample variances", view.variance)
show("values", profile.values())
show("variances of the means", profile.variances())
show("counts()", profile.counts())
cell = profile[bh.loc(55.0)]
show("cell at 55 GeV", [cell.count, cell.value, cell.variance])
show("cell by index", [profile[2].count, profile[2].value])
total = profile.sum()
show("all jets", [total.count, total.value, total.variance])
coarse = profile[::bh.rebin(3)]
show("rebinned edges", coarse.axes[0].edges)
show("rebinned means", coarse.view().value)
show("rebinned counts", coarse.view()["count"])
show("response above 100 GeV", [profile[bh.loc(100.0)::sum].count, profile[bh.loc(100.0)::sum].value])

# A weighted profile over variable bins.
weighted = bh.Histogram(bh.axis.Variable([20.0, 30.0, 50.0, 80.0, 120.0, 200.0]), storage=bh.storage.WeightedMean())
weighted.fill(pt, sample=response, weight=weight)
wv = weighted.view()
show("sum of weights", wv.sum_of_weights)
show("sum of weights squared", wv.sum_of_weights_squared)
show("weighted means", wv.value)
show("weighted variances", wv.variance)
show("effective counts", weighted.counts())
show("variances of the weighted means", weighted.variances())
wsum = weighted.sum()
show("weighted total", [wsum.sum_of_weights, wsum.sum_of_weights_squared, wsum.value, wsum.variance])

# A 2-D profile: the response against pile-up vertices, barrel and endcap.
pileup = bh.Histogram(bh.axis.Integer(0, 12), bh.axis.Boolean(), storage=bh.storage.Mean())
pileup.fill(vertices, barrel, sample=response)
show("barrel means", pileup[:, bh.loc(True)].view().value)
show("endcap counts", pileup[:, False].view().count)
show("by vertices", pileup.project(0).view().value)
show("barrel and endcap", pileup[::sum, :].view().value)

# Persistence: pickle, copy and compare.
blob = pickle.dumps(profile)
restored = pickle.loads(blob)
print("restored equal:", restored == profile, "label:", restored.axes[0].label, "metadata:", restored.metadata)
restored.fill(np.array([50.0, 150.0]), sample=np.array([0.75, 1.0]))
print("after a fill:", restored == profile, "counts:", int(restored.view().count.sum()))
merged = profile + pickle.loads(blob)
show("merged counts", merged.view().count)
show("merged means", merged.view().value)
print("merged means as the profile's:", np.allclose(merged.view().value, profile.view().value, rtol=1e-12, atol=0))
deep = copy.deepcopy(weighted)
print("deepcopy equal:", deep == weighted, "copy equal:", weighted.copy() == weighted)
print("reset:", deep.reset().empty(), deep == weighted, deep.sum().sum_of_weights)
deep.fill(pt, sample=response, weight=weight)
print("refilled equal:", deep == weighted)
