"""The CUDA-event timer the Python benchmarks share (bench/python_bench.py, bench/patterns_torch.py)."""
import statistics


def median_ms(torch, fn, repeats=15, budget_ms=None):
    """Median milliseconds of fn() between CUDA events on the current stream, after warm-up calls
    until at least two of them and 20 ms have passed (the GPU's clocks take a few ms to rise after
    a pause; bench/timing.cuh does the same). With budget_ms, a call slow enough that `repeats` of
    them would pass it is timed fewer times, at least 3."""
    stream = torch.cuda.current_stream()  # once: Event.record() would make a Stream object a call

    def timed():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end)

    torch.cuda.synchronize()
    warm, done = 0.0, 0
    while done < 2 or warm < 20:
        warm += timed()
        done += 1
    if budget_ms is not None:
        repeats = max(3, min(repeats, int(budget_ms * done / warm)))
    return statistics.median(timed() for _ in range(repeats))
