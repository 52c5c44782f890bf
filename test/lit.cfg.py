# lit configuration of Tessera's FileCheck tests (.mlir, .test). The GoogleTest
# executables run through test/Unit/lit.cfg.py.
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "Tessera"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessera_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in",
                   "Unit", "Inputs"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = ["tessera-opt", "tessera-translate", "tessera-compile",
         "tessera-schedule", "tessera-plan", "tessera-interp"]
bin_dir = os.path.join(config.tessera_obj_root, "bin")
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(bin_dir, t))], [bin_dir])
if os.path.exists(os.path.join(bin_dir, "tessera-interp")):
    config.available_features.add("tessera-interp")

config.substitutions.append(("%tessera_src", config.tessera_src_root))
# lit runs under Debian's python3, which has numpy, torch and onnx.
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%tessera_obj", config.tessera_obj_root))
# The shared workloads (Piper's and Tessel's inputs) sit beside the checkout.
config.substitutions.append(
    ("%workloads", os.path.normpath(
        os.path.join(config.tessera_src_root, "..", "shared", "workloads"))))
