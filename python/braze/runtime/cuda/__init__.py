"""Running IREE's CUDA kernels on torch's stream: the launch plan (plan.py, no dependencies;
braze.compiler.cuda_plan reads it off IREE's HAL program at compile time), launching it with the
CUDA driver (launch.py, driver.py, graph.py: torch and libcuda), and checking it on the CPU
against the commands IREE's own VM bytecode issues (plan_check.py: iree.runtime's wheel only)."""
