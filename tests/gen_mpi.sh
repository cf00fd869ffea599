#!/usr/bin/env bash
# gen_mpi.sh - `superopt generate --mpi` (rules/gen_mpi.c): mpirun -np 2 writes byte for byte the file of
# the single-process run; --mpi without mpirun (one rank) too; a failure on one rank ends every rank with
# one line naming it and a non-zero exit; ranks killed mid-run resume from their own checkpoints.
# Usage: tests/gen_mpi.sh SUPEROPT. Prints "ok"/"FAIL" lines; exit 0 iff all pass.
set -u
SO=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
say() { echo "$1 - $2"; [ "$1" = ok ] || fail=1; }
command -v mpirun >/dev/null || { echo "FAIL - mpirun not found (make deps installs openmpi-bin)"; exit 1; }
# CI runs as root without a terminal or standard input; one machine, so more ranks than cores is fine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan (make test-asan) LeakSanitizer is off here: OpenMPI leaves its own allocations behind
# at MPI_Finalize, in plugins unloaded by then (unsymbolisable, so no narrow suppression works).
# Invalid accesses and UB are still fatal; single-process generate is leak-checked by gen_resume.sh
# under ASan and by tests/valgrind.sh.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPIRUN=(mpirun -np 2 --oversubscribe --bind-to none)
GEN=(generate --max-ops 2 --seed 1 --threads 1 -q)
"$SO" "${GEN[@]}" -o "$TMP/ref.rules" 2>/dev/null </dev/null || { echo "FAIL - single-process reference run"; exit 1; }

# 1. two ranks == one process, byte for byte; no checkpoint left behind
t0=$(date +%s%N)
"${MPIRUN[@]}" "$SO" "${GEN[@]}" --mpi -o "$TMP/a.rules" >"$TMP/log" 2>&1 </dev/null
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && cmp -s "$TMP/a.rules" "$TMP/ref.rules" && [ -z "$(ls "$TMP" | grep ckpt)" ]; then
    say ok "mpirun -np 2 generate --mpi == single process ($(grep -c '^rule' "$TMP/ref.rules") rules, $ms ms)"
else say FAIL "mpirun -np 2 generate --mpi == single process (exit $rc)"; cat "$TMP/log"; fi

# 2. --mpi without mpirun: one rank, same file
if "$SO" "${GEN[@]}" --mpi -o "$TMP/b.rules" >"$TMP/log" 2>&1 </dev/null && cmp -s "$TMP/b.rules" "$TMP/ref.rules"; then
    say ok "--mpi without mpirun (1 rank) == single process"
else say FAIL "--mpi without mpirun (1 rank)"; cat "$TMP/log"; fi

# 3. an error on rank 1 (its checkpoint is corrupt) aborts both ranks: non-zero exit, one line naming
#    the rank, no output file
echo garbage >"$TMP/c.rules.ckpt.1of2"
"${MPIRUN[@]}" "$SO" "${GEN[@]}" --mpi --resume -o "$TMP/c.rules" >"$TMP/log" 2>&1 </dev/null
rc=$?
if [ $rc -ne 0 ] && [ "$(grep -c '^superopt generate: ' "$TMP/log")" -eq 1 ] &&
    grep -q '^superopt generate: rank 1 of 2: .*c.rules.ckpt.1of2: not a generate checkpoint' "$TMP/log" && [ ! -e "$TMP/c.rules" ]; then
    say ok "error on rank 1 aborts all ranks (exit $rc): $(grep '^superopt generate: ' "$TMP/log" | cut -c1-70)..."
else say FAIL "error on rank 1 aborts all ranks (exit $rc)"; cat "$TMP/log"; fi

# 4. --mpi with --shard is refused
"$SO" "${GEN[@]}" --mpi --shard 0/2 -o "$TMP/d.rules" >"$TMP/log" 2>&1 </dev/null
rc=$?
if [ $rc -eq 1 ] && grep -q "cannot be combined with --shard" "$TMP/log"; then say ok "--mpi --shard refused"
else say FAIL "--mpi --shard refused (exit $rc)"; cat "$TMP/log"; fi

# 5. both ranks die after their 2nd checkpoint write (test hook); --resume continues each rank from
#    its own checkpoint and gives the same file, then removes the checkpoints
SO_GEN_CKPT_INTERVAL=0 SO_GEN_CKPT_STOP_AFTER=2 "${MPIRUN[@]}" "$SO" "${GEN[@]}" --mpi -o "$TMP/e.rules" >"$TMP/log" 2>&1 </dev/null
rc=$?
n_ckpt=$(ls "$TMP" | grep -c 'e.rules.ckpt')
SO_GEN_CKPT_INTERVAL=0 "${MPIRUN[@]}" "$SO" "${GEN[@]}" --mpi --resume -o "$TMP/e.rules" >>"$TMP/log" 2>&1 </dev/null
rc2=$?
if [ $rc -ne 0 ] && [ "$n_ckpt" -eq 2 ] && [ $rc2 -eq 0 ] && cmp -s "$TMP/e.rules" "$TMP/ref.rules" && [ -z "$(ls "$TMP" | grep e.rules.ckpt)" ]; then
    say ok "ranks killed mid-proof (checkpoints of both left), --resume == single process"
else say FAIL "kill + --resume under mpirun (exits $rc, $rc2; $n_ckpt checkpoints)"; cat "$TMP/log"; fi
exit $fail
