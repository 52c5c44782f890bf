# lit configuration of Tessera's FileCheck tests (.mlir, .test). The GoogleTest
# executables run through test/Unit/lit.cfg.py.
import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "Tessera"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessera_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in",
                   "Unit", "Inputs", "lib"]

llvm_config.use_default_substitutions()
# The BLAS kernel choice reaches the tests (scripts/test.sh re-runs the
# equivalence tests under a second OpenBLAS kernel type).
for var in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = ["tessera-opt", "tessera-translate", "tessera-compile",
         "tessera-schedule", "tessera-plan", "tessera-interp", "tessera-ckpt",
         "tessera-calibrate"]
bin_dir = os.path.join(config.tessera_obj_root, "bin")
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(bin_dir, t))], [bin_dir])
if os.path.exists(os.path.join(bin_dir, "tessera-interp")):
    config.available_features.add("tessera-interp")
# The CUDA runtime was built (nvcc found): its programs compile and link
# here; they run only where there is a GPU (cuda-gpu).
if os.path.exists(os.path.join(bin_dir, "TesseraCudaNoGpuProgram")):
    config.available_features.add("cuda-toolkit")
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("cuda-gpu")

config.substitutions.append(("%tessera_src", config.tessera_src_root))
# lit runs under Debian's python3, which has numpy, torch and onnx.
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%tessera_obj", config.tessera_obj_root))
# mpirun as the MPI tests use it: as root, oversubscribed, unbound ranks
# that yield when idle (lit runs several jobs at once on few cores), no
# single-copy transport (containers often forbid it), unaggregated help.
config.substitutions.append(
    ("%mpirun", "mpirun --allow-run-as-root --oversubscribe --bind-to none "
     "--mca mpi_yield_when_idle 1 --mca btl_vader_single_copy_mechanism none "
     "--mca orte_base_help_aggregate 0"))

# Piper's and Tessel's inputs: copies under bench/workloads (a clone carries them).
config.substitutions.append(
    ("%workloads", os.path.normpath(
        os.path.join(config.tessera_src_root, "bench", "workloads"))))
