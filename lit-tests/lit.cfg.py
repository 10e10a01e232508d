# -*- Python -*-
# LLVM lit configuration for the L0 regression tests (the same .ir files that
# `cargo test -p lit-tests` runs). Usage, from the repository root:
#   L0_OPT=target/release/l0-opt lit -v lit-tests/tests/ir
# Env: L0_OPT (default <repo>/target/debug/l0-opt), FILECHECK (default
# /usr/lib/llvm-14/bin/FileCheck), LIT_EXEC_ROOT (default <repo>/target/lit).

import os

import lit.formats

config.name = "L0"
# False: lit's internal shell, which has `not` built in and runs pipes with pipefail.
config.test_format = lit.formats.ShTest(False)
config.suffixes = [".ir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.abspath(os.path.join(config.test_source_root, ".."))
config.test_exec_root = os.environ.get(
    "LIT_EXEC_ROOT", os.path.join(repo_root, "target", "lit")
)
config.excludes = ["src", "target", "Output"]

l0_opt = os.path.abspath(
    os.environ.get("L0_OPT", os.path.join(repo_root, "target", "debug", "l0-opt"))
)
filecheck = os.environ.get("FILECHECK", "/usr/lib/llvm-14/bin/FileCheck")

# Replace the tool names only where they stand as words, never inside a path.
def tool(name):
    return r"(?<![\w/.-])" + name.replace("-", r"\-") + r"(?![\w/.-])"

config.substitutions.append((tool("l0-opt"), l0_opt))
config.substitutions.append((tool("FileCheck"), filecheck))

# `not --crash` (a command expected to crash) is not built into lit's shell:
# it runs the harness's l0-not (built by `cargo test -p lit-tests` next to
# l0-opt), which counts death by a signal or a Rust panic as a crash.
l0_not = os.path.abspath(
    os.environ.get("L0_NOT", os.path.join(os.path.dirname(l0_opt), "l0-not"))
)
config.substitutions.insert(0, (tool("not --crash"), l0_not + " --crash"))
