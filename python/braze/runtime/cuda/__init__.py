"""Running IREE's CUDA kernels on torch's stream: the launch plan (plan.py, no dependencies),
reading it off IREE's HAL program (build.py, compile side), launching it with the CUDA
driver (launch.py, runtime side: torch and libcuda), and checking it on the CPU against the
commands IREE's own VM bytecode issues (replay.py: iree.runtime's wheel only)."""
