import tally as bh

# Datasets and systematic variations, written for boost-histogram: a dataset axis of strings and
# a variation axis of integers, both growing as the fills bring new ones, over a Regular axis of
# missing transverse energy (MET), Weight storage; then a count of jets and b-tags per dataset
# (Integer x Boolean, Int64 storage). The script selects by dict and by category, sums axes
# away, projects, and forms yields, ratios and an envelope. It runs on tally with its first line
# changed from `import boost_histogram as bh` (examples/boost/README.md).

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


rng = np.random.default_rng(11)

# (events, gamma shape, gamma scale, weight scale of the weights in steps of 1/8)
DATASETS = {"data": (3000, 2.5, 20.0, 0.0), "ttbar": (2000, 3.0, 25.0, 0.5), "wjets": (5000, 2.0, 18.0, 0.75)}
VARIATIONS = {0: 1.0, 1: 1.05, 2: 0.95}  # nominal, jet energy scale up, down

met_hist = bh.Histogram(
    bh.axis.StrCategory([], growth=True, metadata="dataset"),  # grown by the fills, as hist users write it
    bh.axis.IntCategory([], growth=True, metadata="variation"),
    bh.axis.Regular(20, 0.0, 200.0, metadata="MET [GeV]"),
    storage=bh.storage.Weight(),
)
jets_hist = bh.Histogram(
    bh.axis.StrCategory(list(DATASETS), metadata="dataset"),
    bh.axis.Integer(0, 8, metadata="jets"),
    bh.axis.Boolean(metadata="b-tagged"),
    storage=bh.storage.Int64(),
)

for name, (n, shape, scale, weight_scale) in DATASETS.items():
    met = rng.gamma(shape, scale, n)
    met = met[met < 190.0]  # the preselection: every variation stays inside the axis
    w = 1.0 if name == "data" else weight_scale * rng.integers(6, 11, met.size) / 8
    for variation, factor in VARIATIONS.items():
        if name == "data" and variation != 0:
            continue  # data has no variations
        met_hist.fill(name, variation, met * factor, weight=w)  # scalars broadcast against the arrays
    jets = np.minimum(rng.poisson(4.0 if name == "ttbar" else 1.5, met.size), 7)
    btag = rng.random(met.size) < (0.7 if name == "ttbar" else 0.15)
    jets_hist.fill(name, jets, btag)

print("datasets", list(met_hist.axes[0]), "variations", list(met_hist.axes[1]))
print("shape", met_hist.shape, met_hist.axes.size, "metadata", met_hist.axes.metadata)
print("index of wjets", met_hist.axes[0].index("wjets"), "value of bin 1", met_hist.axes[0].value(1),
      "bin 2 of variations", met_hist.axes[1].bin(2))

# Nominal yields per dataset: the variation selected, MET summed away.
yields = met_hist[:, bh.loc(0), ::sum]
show("nominal yields", yields.values())
show("nominal yield variances", yields.variances())
show("per dataset, all variations", met_hist.project(0).values())

# One dataset by dict, then its variations.
ttbar = met_hist[{0: bh.loc("ttbar")}]
print("ttbar axes", ttbar.axes.size)
nominal = ttbar[bh.loc(0), :].values()
up, down = ttbar[bh.loc(1), :].values(), ttbar[bh.loc(2), :].values()
show("ttbar nominal", nominal)
show("ttbar up/nominal", np.divide(up, nominal, out=np.zeros_like(up), where=nominal > 0))
show("ttbar envelope", np.maximum(np.abs(up - nominal), np.abs(down - nominal)))
show("ttbar by dict of two", met_hist[{0: bh.loc("ttbar"), 1: bh.loc(2)}].values())
show("ttbar yields per variation", met_hist[bh.loc("ttbar"), :, sum].values())

# The prediction: MC datasets added at the nominal variation, against the data.
mc = met_hist[bh.loc("ttbar"), bh.loc(0), :] + met_hist[bh.loc("wjets"), bh.loc(0), :]
data = met_hist[bh.loc("data"), bh.loc(0), :]
show("mc", mc.values())
show("mc variances", mc.variances())
show("data", data.values())
show("data / mc", np.divide(data.values(), mc.values(), out=np.zeros(20), where=mc.values() > 0))
show("MET centers", mc.axes[0].centers)
show("all datasets, nominal", met_hist[::sum, bh.loc(0), :].values())
show("MET x dataset, variations summed", met_hist.project(2, 0).values()[:5])
show("variations summed two ways", np.array_equal(met_hist[:, sum, :].values(), met_hist[:, ::sum, :].values()))

# Jets and b-tags: Int64 counts.
show("jets edges", jets_hist.axes[1].edges)
show("ttbar jets, b-tagged", jets_hist[bh.loc("ttbar"), :, bh.loc(True)].values())
show("ttbar jets, not b-tagged", jets_hist[bh.loc("ttbar"), :, False].values())
show("ttbar jets", jets_hist[bh.loc("ttbar"), :, sum].values())
tagged, all_jets = jets_hist[:, :, True].values(), jets_hist[:, :, sum].values()
show("b-tag fraction by dataset and jets", np.divide(tagged, all_jets, out=np.zeros(all_jets.shape),
                                                      where=all_jets > 0))
show("all datasets: jets x b-tag", jets_hist[sum, :, :].values())
show("b-tag x jets", jets_hist.project(2, 1).values())
show("jets >= 4 per dataset", jets_hist[:, bh.loc(4)::sum, ::sum].values())
# boost-histogram gives these totals of counts as floats, tally as ints: int() prints both alike.
print("total entries", int(jets_hist.sum()), "wjets with 0 jets", int(jets_hist[bh.loc("wjets"), 0, ::sum]))
