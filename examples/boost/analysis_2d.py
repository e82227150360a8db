import tally as bh

# A 2-D analysis written for boost-histogram: invariant mass x transverse momentum of weighted
# events, signal (a peak) and background (a falling spectrum). It fills Regular x Variable
# histograms of Weight storage, slices a mass window by value, rebins, projects, sums, scales
# the background and adds the samples. It runs on tally with its first line changed from
# `import boost_histogram as bh` (examples/boost/README.md).

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


rng = np.random.default_rng(7)


def events(mass, pt):
    """The events inside the analysis region, each with a weight in steps of 1/8 (0.5 to 1.5)."""
    keep = (mass > 60.0) & (mass < 120.0) & (pt < 200.0)
    mass, pt = mass[keep], pt[keep]
    return mass, pt, rng.integers(4, 13, mass.size) / 8


sig_mass, sig_pt, sig_w = events(rng.normal(91.19, 4.0, 4000), rng.gamma(2.0, 15.0, 4000))
bkg_mass, bkg_pt, bkg_w = events(60.0 + rng.exponential(25.0, 12000), rng.exponential(30.0, 12000))
show("events", [sig_mass.size, bkg_mass.size])


def book():
    return bh.Histogram(
        bh.axis.Regular(30, 60.0, 120.0, metadata="m_ll [GeV]"),
        bh.axis.Variable([0.0, 10.0, 20.0, 35.0, 50.0, 80.0, 120.0, 200.0], metadata="pT [GeV]"),
        storage=bh.storage.Weight(),
    )


sig = book().fill(sig_mass, sig_pt, weight=sig_w)
bkg = book()
for part in np.array_split(np.argsort(bkg_pt), 4):  # as if read file by file, sorted in pT
    bkg.fill(bkg_mass[part], bkg_pt[part], weight=bkg_w[part])

print("shape", sig.shape, sig.axes.size, len(sig.axes), sig.ndim)
print("metadata", sig.axes[0].metadata, "|", sig.axes[1].metadata)
show("mass edges", sig.axes[0].edges)
show("pt edges", sig.axes[1].edges)
show("pt centers", sig.axes[1].centers)
show("pt widths", sig.axes[1].widths)
print("bins of (91.0, 25.0):", sig.axes.index(91.0, 25.0), sig.axes[1].index(250.0))
print("pt bin 2:", sig.axes[1].bin(2), "mass bin 0:", sig.axes[0].bin(0))

s, b = sig.sum(), bkg.sum()
show("signal sum", [s.value, s.variance])
show("background sum", [b.value, b.variance])
show("signal cells", sig.values()[10:20, :3])
show("signal variances", sig.variances()[10:20, :3])
show("view value == values", np.array_equal(bkg.view().value, bkg.values()))
show("view variance == variances", np.array_equal(bkg.view()["variance"], bkg.variances()))

# The background normalisation from a control region, then the sum of the samples.
total = sig + bkg * 0.75
t = total.sum()
show("total sum", [t.value, t.variance])
show("scaled background variances", (bkg * 0.75).variances()[::6, ::2])
show("twice the signal", (2 * sig).values()[14, :])

# One cell, and one pT bin by value.
cell = total[bh.loc(91.19), bh.loc(25.0)]
show("cell (91.19, 25)", [cell.value, cell.variance])
show("mass in 20 < pT < 35", total[{1: bh.loc(25.0)}].values())
show("mass in 20 < pT < 35 (by index)", total[:, 2].variances())

# A window around the peak: sliced by value, summed over the window.
window = total[bh.loc(81.0):bh.loc(101.0), :]
show("window edges", window.axes[0].edges)
w = window.sum()
show("window sum", [w.value, w.variance])
in_window = total[bh.loc(81.0):bh.loc(101.0):sum, :]
show("window pT values", in_window.values())
show("window pT variances", in_window.variances())
sig_window = sig[bh.loc(81.0):bh.loc(101.0):sum, :]
show("signal / sqrt(total var)", sig_window.values() / np.sqrt(in_window.variances()))

# Rebinning: 3 mass bins into one; a range by value, rebinned and summed over pT.
coarse = total[::bh.rebin(3), :]
show("coarse edges", coarse.axes[0].edges)
show("coarse first pT bin", coarse.values()[:, 0])
ranged = total[bh.loc(70.0):bh.loc(112.0):bh.rebin(3), ::sum]
show("ranged edges", ranged.axes[0].edges)
show("ranged values", ranged.values())

# Projections, three ways.
mass = total.project(0)
pt = total.project(1)
show("mass spectrum", mass.values())
show("pt spectrum", pt.values())
show("pt spectrum variances", pt.variances())
print("[:, ::sum] == project(0):", total[:, ::sum] == mass)
print("[sum, :] == project(1):", total[sum, :] == pt)
show("pt density", pt.values() / pt.axes[0].widths / pt.sum().value)
show("signal fraction per pT bin", sig.project(1).values() / pt.values())

# Sparse-grid axes broadcast against the cells: the mean mass in each pT bin.
centers = total.axes.centers
show("mean mass per pT bin", (total.values() * centers[0]).sum(axis=0) / total.values().sum(axis=0))
show("cell areas", (total.axes.widths[0] * total.axes.widths[1])[0])

# Copies compare equal until one changes.
again = total.copy()
print("copy equal:", again == total, "empty:", again.empty())
again.fill(np.array([91.0]), np.array([25.0]), weight=np.array([0.5]))
print("after one more fill:", again == total)
print("after reset:", again.reset().empty(), again.sum().value)
