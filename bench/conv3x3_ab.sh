#!/usr/bin/env bash
# conv3x3_ab.sh - builds bench/conv3x3_bench.c with two builds of the AVX2 blocked kernels (OLD's kernels/nchwc_avx2.c
# and this tree's) and runs it: paired interleaved old/new timing per conv shape (a design tool, not a claim).
# Usage: [OLD=/work/main] [CFLAGS_NEW=...] bench/conv3x3_ab.sh [ROUNDS [THREADS [FILTER]]]   (this tree built first)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
OLD=${OLD:-/work/main}
out=$here/build/conv3x3_ab
mkdir -p "$out"
cf="-std=c11 -O2 -g -march=x86-64-v2 -mavx2 -mfma -fopenmp -D_GNU_SOURCE -Wall -Wextra -Wno-unused-function"
printf '#define so_nchwc_avx2 cb_old\n#include "%s/kernels/nchwc_avx2.c"\n' "$OLD" >"$out/tab_old.c"
printf '#define so_nchwc_avx2 cb_new\n#include "%s/kernels/nchwc_avx2.c"\n' "$here" >"$out/tab_new.c"
[ "$out/tab_old.o" -nt "$OLD/kernels/nchwc_body.h" ] && [ "$out/tab_old.o" -nt "$OLD/kernels/nchwc_avx2.c" ] ||
    cc $cf -c "$out/tab_old.c" -o "$out/tab_old.o" &
cc $cf ${CFLAGS_NEW:-} -c "$out/tab_new.c" -o "$out/tab_new.o" &
cc $cf -I"$here/src" -I"$here/build/gen" -c "$here/bench/conv3x3_bench.c" -o "$out/main.o" &
wait
cc -fopenmp "$out/main.o" "$out/tab_old.o" "$out/tab_new.o" "$here/build/libsuperopt.a" -lz3 -lxxhash -lopenblas -lprotobuf-c -lglpk -lm \
    -lpthread -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi -o "$out/conv3x3_bench"
"$out/conv3x3_bench" "$@"
