#!/bin/sh
# Cross-check every DIR/*.onnx: ONNX Runtime on NAME.in.bin must match the PyTorch NAME.out.bin.
# usage: tools/ort/check_data.sh [DIR] [--rtol R] [--atol A] [--opt LEVEL]   (DIR defaults to data/)
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/../../data
case "${1:-}" in ""|-*) ;; *) dir=$1; shift ;; esac
rtol=1e-4 atol=1e-5 opt=all
while [ $# -gt 0 ]; do
  case $1 in
    --rtol) rtol=$2; shift 2 ;;
    --atol) atol=$2; shift 2 ;;
    --opt) opt=$2; shift 2 ;;
    *) echo "usage: $0 [DIR] [--rtol R] [--atol A] [--opt LEVEL]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for m in "$dir"/*.onnx; do
  [ -e "$m" ] || continue
  n=$(basename "$m" .onnx)
  case $n in *.opt) continue ;; esac
  if node "$here/ort_run.js" "$m" --inputs "$dir/$n.in.bin" --outputs "$tmp/$n.bin" --opt "$opt" \
     && r=$(python3 "$here/../../data/compare_outputs.py" "$tmp/$n.bin" "$dir/$n.out.bin" \
            --rtol "$rtol" --atol "$atol" 2>&1); then
    echo "$n: $r"; pass=$((pass + 1))
  else
    echo "$n: ${r:-ort_run failed}"; fail=$((fail + 1))
  fi
  r=
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
