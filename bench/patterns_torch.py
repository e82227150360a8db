"""torch anchors for bench/patterns_bench.cu: torch.sigmoid (f32, f16; 2^28, 1024^2, 4096^2) and
a + b[:, None] (f32, 16384^2), timed like the C++ benchmark (CUDA events after warm-up, median of
15). Prints JSON on stdout. Run on the GPU machine: python3 bench/patterns_torch.py > torch.json"""
import json
import statistics

import torch


def median_ms(fn, runs=15):
    fn()
    fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        x = torch.rand(1 << 28, device="cuda", dtype=dtype) * 8 - 4
        y = torch.empty_like(x)
        ms = median_ms(lambda: torch.sigmoid(x, out=y))
        rows.append({"workload": f"sigmoid {name} 2^28", "who": "torch.sigmoid", "ms": ms,
                     "gbs": 2 * x.numel() * x.element_size() / ms / 1e6})
        del x, y
    for side in (1024, 4096):
        x = torch.rand(side, side, device="cuda") * 8 - 4
        y = torch.empty_like(x)
        ms = median_ms(lambda: torch.sigmoid(x, out=y))
        rows.append({"workload": f"sigmoid f32 {side}^2", "who": "torch.sigmoid", "ms": ms, "us": ms * 1e3})
    side = 16384
    a = torch.rand(side, side, device="cuda")
    b = torch.rand(side, device="cuda")
    out = torch.empty_like(a)
    ms = median_ms(lambda: torch.add(a, b[:, None], out=out))
    rows.append({"workload": "a + b[:, None] f32 16384^2", "who": "torch.add", "ms": ms,
                 "gbs": (2 * a.numel() + side) * 4 / ms / 1e6})
    del a, out
    x = torch.rand(1 << 28, device="cuda")
    ms = median_ms(lambda: torch.sum(x))
    rows.append({"workload": "sum f32 2^28", "who": "torch.sum", "ms": ms, "gbs": x.numel() * 4 / ms / 1e6})
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
