"""tally.distributed: histograms summed across processes and GPUs.

- ``all_reduce(x, group=None)``: sums ``x`` over the ranks of a ``torch.distributed`` process
  group, in place, and returns it: a torch tensor of counts or sums (CUDA tensors for the NCCL
  backend, CPU ones for gloo), or a :class:`tally.Histogram` (its cells are on the host; they
  travel, on the current CUDA device for NCCL and on the CPU otherwise, as one int64 tensor of
  counts or exact sums' digits, flow counters and samples, plus a float64 tensor of plain sums).
- ``sharded_histogram(shards, bins, range, weights=None)``: numpy.histogram of the shards taken
  together, for one process holding one array on each of several GPUs: each shard is
  histogrammed on its own device and the counts are added on the first shard's device.

Counts are exact, and so are the sums of a histogram with ``exact_sums=True``: the reduced
histogram equals one histogram of all the data bit for bit. Plain float64 sums of weights are
added in the collective's order (NCCL's ring or tree), so they may differ in the last bits from
one histogram of all the data unless every partial sum is exact (integer weights, say). Every
rank must pass a histogram of the same axes and options: the collective cannot check that.
"""

import numpy as np

from . import _functions
from ._arrays import to_host
from ._devices import _cupy, _torch
from ._histogram import Histogram

__all__ = ["all_reduce", "sharded_histogram"]


def _torch_distributed():
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        raise ImportError("tally.distributed.all_reduce needs torch (torch.distributed)") from e
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("tally.distributed.all_reduce: initialise torch.distributed first "
                           "(torch.distributed.init_process_group)")
    return torch, dist


def all_reduce(x, group=None):
    """Sums ``x`` (a torch tensor or a tally.Histogram) over the ranks of ``group`` (None: the
    default process group) in place, and returns it. A collective: every rank calls it."""
    if isinstance(x, Histogram):
        return _all_reduce_histogram(x, group)
    torch, dist = _torch_distributed()
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"tally.distributed.all_reduce: expected a torch tensor or a tally.Histogram, "
                        f"got {type(x).__name__}")
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"tally.distributed.all_reduce: counts or sums expected, got a {x.dtype} tensor")
    dist.all_reduce(x, op=dist.ReduceOp.SUM, group=group)
    return x


def _all_reduce_histogram(h, group):
    torch, dist = _torch_distributed()
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" else "cpu"
    # Each part's cells: float64 sums, or uint64 counts or exact sums' digits (which an integer
    # sum adds without carries); then its flow counters and samples.
    parts = h._parts()
    cells = [part.exact_digits().ravel() if part.exact_sums else np.ascontiguousarray(part.values()).ravel()
             for part in parts]
    cells = [c if c.dtype == np.float64 else c.view(np.uint64) for c in cells]
    words = [np.array([*(part.flow() if part.flow_counters else (0, 0, 0)), part.samples], np.uint64)
             for part in parts]
    summed = _all_reduce_arrays(cells + words, torch, dist, device, group)
    for part, c, w in zip(parts, summed, summed[len(parts):]):
        flow, samples = tuple(w[:3].tolist()), int(w[3])
        if part.exact_sums:
            part.assign_exact_digits(c, flow, samples)
        else:
            part.assign(c, flow, samples)
    return h


def _all_reduce_arrays(arrays, torch, dist, device, group):
    """The float64 and uint64 ``arrays`` summed over the ranks: one collective a dtype, float64
    first, so the same sequence on every rank. uint64 travels as int64, whose sum wraps alike."""
    out = list(arrays)
    for dtype in (np.float64, np.uint64):
        which = [i for i, a in enumerate(arrays) if a.dtype == dtype]
        if not which:
            continue
        flat = np.concatenate([arrays[i] for i in which])
        t = torch.from_numpy(flat.view(np.int64) if dtype == np.uint64 else flat).to(device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
        total = t.cpu().numpy().view(dtype)
        for i, piece in zip(which, np.split(total, np.cumsum([arrays[i].size for i in which])[:-1])):
            out[i] = piece
    return out


def sharded_histogram(shards, bins, range, weights=None):
    """numpy.histogram of the concatenated ``shards`` (a list of arrays, one a device, e.g. torch
    CUDA tensors on cuda:0, cuda:1, ...), each histogrammed where it lies by tally.histogram.
    Returns ``(hist, bin_edges)`` as tally.histogram does, ``hist`` on the first shard's device
    and library. ``range`` is required where ``bins`` is a count (one range for every shard; numpy
    would take each shard's own minimum and maximum). ``weights``: None or one array a shard,
    on the shard's device."""
    shards = list(shards)
    if not shards:
        raise ValueError("sharded_histogram: no shards")
    if range is None and np.ndim(bins) == 0:
        raise ValueError("sharded_histogram: give range (one for all shards) or bins as edges")
    weights = [None] * len(shards) if weights is None else list(weights)
    if len(weights) != len(shards):
        raise ValueError(f"sharded_histogram: {len(shards)} shards but {len(weights)} weight arrays")
    total, edges = _functions.histogram(shards[0], bins, range, weights=weights[0])
    for shard, w in zip(shards[1:], weights[1:]):
        part, _ = _functions.histogram(shard, bins, range, weights=w)
        total = total + _moved_like(part, total)
    return total, edges


def _moved_like(part, like):
    """``part`` on ``like``'s device, in its library (torch and cupy copy between GPUs)."""
    torch, cupy = _torch(), _cupy()
    if torch is not None and isinstance(like, torch.Tensor):
        return part.to(like.device)
    if cupy is not None and isinstance(like, cupy.ndarray):
        with cupy.cuda.Device(like.device.id):
            return cupy.asarray(part)
    return to_host(part)
