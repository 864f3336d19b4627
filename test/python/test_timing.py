"""braze.tools.timing: the shared timer (the CPU path; CUDA needs the GPU host) and its ncu reader."""

from types import SimpleNamespace

from braze.tools.timing import kernel_times, median_ms, ncu_kernels

NCU_OUTPUT = '''==PROF== Connected to process 1234 (/usr/bin/python3)
profiled gemm_4096x4096x1024
==PROF== Disconnected from process 1234
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1234","python3","h","braze_gemm_0","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","1,234,567"
"1","1234","python3","h","void fill<float>(int, T2)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,144"
"2","1234","python3","h","sm90_gemm(int)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","31.52"
"3","1234","python3","h","sm90_gemm(int)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum","byte","1,024"
'''


def test_ncu_kernels_reads_the_csv_among_the_programs_output(tmp_path):
    path = tmp_path / "ncu.csv"
    path.write_text(NCU_OUTPUT)
    # In launch order, in microseconds whatever unit ncu printed, other metrics left out.
    assert ncu_kernels(path) == [("braze_gemm_0", 1234.567), ("void fill<float>(int, T2)", 2.144),
                                 ("sm90_gemm(int)", 31.52)]


def test_ncu_kernels_of_output_without_a_csv_is_empty(tmp_path):
    path = tmp_path / "ncu.csv"
    path.write_text("==PROF== Connected to process 1234\n==ERROR== no kernels were profiled\n")
    assert ncu_kernels(path) == []


def test_median_ms_on_cpu_is_wall_clock():
    assert 0 <= median_ms(lambda: sum(range(1000)), reps=5, device="cpu") < 1000


def _event(name, device, us):
    return SimpleNamespace(name=name, device_type=SimpleNamespace(name=device), device_time=us)


def test_kernel_times_per_call_from_profiler_events():
    # two calls: gemm twice a call (100 + 300 us, 200 + 200 us), one copy a call; host events and
    # zero-time markers left out
    events = [_event("gemm", "CUDA", 100.0), _event("gemm", "CUDA", 300.0), _event("Memcpy DtoD", "CUDA", 10.0),
              _event("aten::mm", "CPU", 999.0), _event("marker", "CUDA", 0.0),
              _event("gemm", "CUDA", 200.0), _event("gemm", "CUDA", 200.0), _event("Memcpy DtoD", "CUDA", 30.0)]
    assert kernel_times(events, calls=2) == {"gemm": (2.0, 0.4), "Memcpy DtoD": (1.0, 0.02)}
