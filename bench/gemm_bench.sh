#!/bin/bash
# gemm_bench.sh - builds and runs bench/gemm_bench.c (so_gemm vs cblas_sgemm): bash bench/gemm_bench.sh [THREADS [ROUNDS [SHAPE-SUBSTRING]]]; BUILD=build dir (default build), GEMM_KC/GEMM_MC override the blocking.
set -e
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/libsuperopt.a"
cc -O2 -fopenmp -std=c11 -D_GNU_SOURCE -Isrc -Ikernels -I"$BUILD/gen" bench/gemm_bench.c "$BUILD/libsuperopt.a" \
   -lz3 -lxxhash -lopenblas -lprotobuf-c $(mpicc --showme:link 2>/dev/null || echo -lmpi) -lm -lpthread -o "$BUILD/gemm_bench"
"$BUILD/gemm_bench" "$@"
