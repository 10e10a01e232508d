#!/bin/sh
# End to end: compile examples/sumsq.ir to an object file with l0-opt, link
# it with l0rt.c and example_main.c using gcc, and run it.
# Env: L0_OPT (path to l0-opt; default: build it with cargo), OUT (output dir).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$(mktemp -d)}
if [ -z "${L0_OPT:-}" ]; then
    (cd "$root" && cargo build -q -p opt-tool --bin l0-opt)
    L0_OPT="${CARGO_TARGET_DIR:-$root/target}/debug/l0-opt"
fi
"$L0_OPT" --pass=fuse,lower --emit=obj -o "$out/sumsq.o" "$root/examples/sumsq.ir"
gcc -O2 -Wall -I"$here" -o "$out/sumsq" "$here/example_main.c" "$here/l0rt.c" "$out/sumsq.o" -lm
"$out/sumsq" "${1:-10}"
