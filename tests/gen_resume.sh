#!/usr/bin/env bash
# gen_resume.sh - resumable `superopt generate`: a run killed (SIGKILL after a seeded random delay,
# or by the checkpoint test hook) and restarted with --resume writes exactly the file of an
# uninterrupted run; the checkpoint is removed on success; a checkpoint of other options, and an edited
# one, are refused.
# Usage: tests/gen_resume.sh SUPEROPT [SEED]. Prints "ok"/"FAIL" lines; exit 0 iff all pass.
set -u
SO=$1
RANDOM=${2:-1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
say() { echo "$1 - $2"; [ "$1" = ok ] || fail=1; }
GEN=(generate --max-ops 2 --seed 1 --threads 2 -q)
"$SO" "${GEN[@]}" -o "$TMP/ref.rules" 2>/dev/null || { echo "FAIL - reference run"; exit 1; }

# 1. deterministic: die right after the 2nd checkpoint write, then resume
rm -f "$TMP/a.rules"*
SO_GEN_CKPT_INTERVAL=0 SO_GEN_CKPT_STOP_AFTER=2 "$SO" "${GEN[@]}" -o "$TMP/a.rules" 2>/dev/null
rc=$?
if [ $rc -eq 137 ] && [ -f "$TMP/a.rules.ckpt" ] && [ ! -f "$TMP/a.rules" ] && grep -q '^p' <(tail -1 "$TMP/a.rules.ckpt") &&
    grep -q '\.' <(tail -1 "$TMP/a.rules.ckpt"); then say ok "killed after 2 checkpoints: partial checkpoint left, no output"
else say FAIL "killed after 2 checkpoints (exit $rc)"; fi

# 2. a checkpoint of other options is refused with one line, and kept
"$SO" generate --max-ops 2 --seed 2 --threads 2 -q -o "$TMP/a.rules" --resume 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "checkpoint of other options" "$TMP/err" && [ -f "$TMP/a.rules.ckpt" ]
then say ok "checkpoint of other options refused: $(cut -c1-80 "$TMP/err")..."
else say FAIL "checkpoint of other options refused (exit $rc)"; cat "$TMP/err"; fi
# a corrupt binary hash is refused too
sed -i '3s/^binary .*/binary 0000000000000000/' "$TMP/a.rules.ckpt"
"$SO" "${GEN[@]}" -o "$TMP/a.rules" --resume 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "another superopt binary" "$TMP/err"; then say ok "checkpoint of another binary refused"
else say FAIL "checkpoint of another binary refused (exit $rc)"; cat "$TMP/err"; fi

# 3. resume from a genuine partial checkpoint
SO_GEN_CKPT_INTERVAL=0 SO_GEN_CKPT_STOP_AFTER=3 "$SO" "${GEN[@]}" -o "$TMP/a.rules" 2>/dev/null
SO_GEN_CKPT_INTERVAL=0 "$SO" "${GEN[@]}" -o "$TMP/a.rules" --resume 2>/dev/null
if cmp -s "$TMP/a.rules" "$TMP/ref.rules" && [ ! -f "$TMP/a.rules.ckpt" ]; then say ok "resume after hook kill: identical, checkpoint removed"
else say FAIL "resume after hook kill"; fi

# 3b. an edited checkpoint (pending and failed candidates rewritten to 'p', issue 19) is refused with one
#     line before anything is written: a 'p' counts only if this build's proof cache holds that proof (a
#     fresh cache folder: the runs above put every proof of this set in the default one)
rm -f "$TMP/e.rules"*
export XDG_CACHE_HOME=$TMP/cache
SO_GEN_CKPT_INTERVAL=0 SO_GEN_CKPT_STOP_AFTER=2 "$SO" "${GEN[@]}" -o "$TMP/e.rules" 2>/dev/null
if [ -f "$TMP/e.rules.ckpt" ] && grep -q '\.' <(tail -1 "$TMP/e.rules.ckpt"); then
    sed -i '5s/[.f]/p/g' "$TMP/e.rules.ckpt"
    "$SO" "${GEN[@]}" -o "$TMP/e.rules" --resume 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "never proved it" "$TMP/err" && [ ! -f "$TMP/e.rules" ]
    then say ok "edited checkpoint ('.'/'f' -> 'p') refused: $(cut -c1-90 "$TMP/err")..."
    else say FAIL "edited checkpoint refused (exit $rc)"; cat "$TMP/err"; fi
else say FAIL "edited checkpoint: no partial checkpoint to edit"; fi
unset XDG_CACHE_HOME

# 3c. an edited checkpoint the other way (proved candidates rewritten to 'f') cannot drop a true rule:
#     failures are verified again on resume, so the output is the uninterrupted run's
rm -f "$TMP/f.rules"*
SO_GEN_CKPT_INTERVAL=0 SO_GEN_CKPT_STOP_AFTER=2 "$SO" "${GEN[@]}" -o "$TMP/f.rules" 2>/dev/null
if [ -f "$TMP/f.rules.ckpt" ] && grep -q '^p' <(tail -1 "$TMP/f.rules.ckpt"); then
    sed -i '5s/p/f/g' "$TMP/f.rules.ckpt"
    SO_GEN_CKPT_INTERVAL=0 "$SO" "${GEN[@]}" -o "$TMP/f.rules" --resume 2>/dev/null
    if cmp -s "$TMP/f.rules" "$TMP/ref.rules"; then say ok "edited checkpoint ('p' -> 'f'): failures verified again, output identical"
    else say FAIL "edited checkpoint ('p' -> 'f') changed the output"; fi
else say FAIL "edited checkpoint ('p' -> 'f'): no partial checkpoint to edit"; fi

# 4. SIGKILL after a seeded random delay (0-700 ms), resume, compare; 6 rounds
had=0
for round in 1 2 3 4 5 6; do
    rm -f "$TMP/b.rules"*
    ms=$((RANDOM % 700))
    SO_GEN_CKPT_INTERVAL=0 "$SO" "${GEN[@]}" -o "$TMP/b.rules" 2>/dev/null &
    pid=$!
    sleep "$(printf '0.%03d' "$ms")"
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    [ -f "$TMP/b.rules.ckpt" ] && had=$((had + 1))
    SO_GEN_CKPT_INTERVAL=0 "$SO" "${GEN[@]}" -o "$TMP/b.rules" --resume 2>/dev/null
    if cmp -s "$TMP/b.rules" "$TMP/ref.rules" && [ ! -f "$TMP/b.rules.ckpt" ]; then :
    else say FAIL "round $round: SIGKILL after $ms ms, resume differs"; fi
done
[ $fail -eq 0 ] && say ok "6 rounds of SIGKILL + --resume byte-identical ($had killed with a checkpoint on disk)"
exit $fail
