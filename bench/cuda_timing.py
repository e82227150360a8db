"""The CUDA-event timer the Python benchmarks share (bench/python_bench.py, bench/patterns_torch.py)."""
import statistics


def median_ms(torch, fn, repeats=15):
    """Median milliseconds of fn() between CUDA events on the current stream, after two warm-up
    calls and a device synchronisation."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
