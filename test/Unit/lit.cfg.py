# lit configuration that runs every GoogleTest executable in build/unittests
# (named *Tests), so unit tests report through the same runner as lit tests.
import os

import lit.formats

config.name = "Tessera-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.tessera_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
