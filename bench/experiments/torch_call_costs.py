"""What the torch calls on braze's CUDA call path cost on their own (bench/NOTES.md §15).

    python bench/experiments/torch_call_costs.py      # GPU host: µs per call, 2000 calls each
"""

import time, torch
torch.cuda.init()
dev = torch.device("cuda", 0)
def t(label, fn, n=2000):
    for _ in range(50): fn()
    s = time.perf_counter_ns()
    for _ in range(n): fn()
    print(f"{label:60s} {(time.perf_counter_ns() - s) / n / 1e3:7.2f} us")
t("torch.cuda.current_stream()", torch.cuda.current_stream)
t("torch.cuda.current_stream(0)", lambda: torch.cuda.current_stream(0))
t("torch.cuda.current_stream(dev)", lambda: torch.cuda.current_stream(dev))
t("torch.cuda.current_stream().synchronize()", lambda: torch.cuda.current_stream().synchronize())
t("torch.cuda.synchronize()", torch.cuda.synchronize)
t("torch.cuda.synchronize(0)", lambda: torch.cuda.synchronize(0))
t("torch._C._cuda_getCurrentStream(0)", lambda: torch._C._cuda_getCurrentStream(0))
ev = torch.cuda.Event()
t("event record+synchronize", lambda: (ev.record(), ev.synchronize()))
t("torch.empty(..., device='cuda:0')", lambda: torch.empty((8, 128, 768), dtype=torch.float32, device="cuda:0"))
t("torch.empty(..., device=dev)", lambda: torch.empty((8, 128, 768), dtype=torch.float32, device=dev))
t("torch.empty(list shape, device=dev)", lambda: torch.empty([8, 128, 768], dtype=torch.float32, device=dev))
x = torch.randn(8, 128, 768, device=dev)
t("x.is_cuda", lambda: x.is_cuda)
t("x.device.index", lambda: x.device.index)
t("x.data_ptr()", lambda: x.data_ptr())
t("x.shape == shape", lambda: x.shape == (8, 128, 768))
