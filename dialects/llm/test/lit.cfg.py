# The llm extension's lit tests: the core's configuration (tools,
# substitutions, features), with this folder as the suite.
import os

lit_config.load_config(
    config, os.path.join(config.tessera_src_root, "test", "lit.cfg.py"))
config.name = "Tessera-llm"
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.llm_obj_root
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in",
                   "Inputs"]
