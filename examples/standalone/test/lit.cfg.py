# -*- Python -*-
# LLVM lit configuration for poly-opt's tests. From the repository root:
#   POLY_OPT=target/release/poly-opt lit -v examples/standalone/test
# (`cargo test -p standalone` runs the same files without lit: tests/lit.rs.)

import os

import lit.formats

config.name = "poly"
config.test_format = lit.formats.ShTest(False)
config.suffixes = [".ir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.environ.get(
    "LIT_EXEC_ROOT", os.path.join(config.test_source_root, "..", "target", "lit")
)
poly_opt = os.path.abspath(os.environ.get("POLY_OPT", "poly-opt"))
filecheck = os.environ.get("FILECHECK", "/usr/lib/llvm-14/bin/FileCheck")

def tool(name):
    return r"(?<![\w/.-])" + name.replace("-", r"\-") + r"(?![\w/.-])"

config.substitutions.append((tool("poly-opt"), poly_opt))
config.substitutions.append((tool("FileCheck"), filecheck))
