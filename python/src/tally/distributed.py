"""tally.distributed: histograms summed across processes and GPUs.

- ``all_reduce(x, group=None)``: sums ``x`` over the ranks of a ``torch.distributed`` process
  group, in place, and returns it: a torch tensor of counts or sums (CUDA tensors for the NCCL
  backend, CPU ones for gloo), or a :class:`tally.Histogram` (its cells are on the host; they
  travel as an int64 tensor of counts, flow counters and samples, exact, or a float64 tensor of
  sums, on the current CUDA device for NCCL and on the CPU otherwise).
- ``sharded_histogram(shards, bins, range, weights=None)``: numpy.histogram of the shards taken
  together, for one process holding one array on each of several GPUs: each shard is
  histogrammed on its own device and the counts are added on the first shard's device.

Counts are exact. Sums of float weights are added in the collective's order (NCCL's ring or
tree), so they may differ in the last bits from one histogram of all the data unless every
partial sum is exact (integer weights, say). Every rank must pass a histogram of the same axes
and options: the collective cannot check that.
"""

import numpy as np

from . import _functions
from ._arrays import _cupy, _torch, to_host
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
    for part in h._hists:
        flow = part.flow() if h._flow else (0, 0, 0)
        tally_words = torch.tensor([*flow, part.samples], dtype=torch.int64, device=device)
        values = np.ascontiguousarray(part.values()).ravel()
        cells = torch.from_numpy(values).to(device)
        # Two collectives for the two dtypes, in the same order on every rank.
        dist.all_reduce(cells, op=dist.ReduceOp.SUM, group=group)
        dist.all_reduce(tally_words, op=dist.ReduceOp.SUM, group=group)
        words = tally_words.cpu().tolist()
        summed = cells.cpu().numpy()
        if values.dtype == np.int64:
            summed = summed.astype(np.uint64)
        part.assign(summed, tuple(words[:3]), words[3])
    return h


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
    total, edges = _functions.histogram(shards[0], bins, range, weights[0])
    for shard, w in zip(shards[1:], weights[1:]):
        part, _ = _functions.histogram(shard, bins, range, w)
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
