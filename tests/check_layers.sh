#!/usr/bin/env bash
# check_layers.sh - fails when an #include points the wrong way between the layers of the project.
#
# The layers, bottom to top, and what each may include (its own layer and the ones listed). This
# table is the one statement of the allowed directions (README.md and docs/ARCHITECTURE.md quote it).
#
#   core       src/                       (nothing above it)
#   kernels    kernels/                   core
#   rulelang   rules/rule*.{h,c}          core (rule.*: the language, rule_shape.*: its shape check)
#   verifier   verifier/                  core kernels rulelang
#   generator  rules/ (all but rule*)     core kernels rulelang verifier
#   search     search/                    core kernels rulelang
#   api        api/                       core kernels rulelang verifier search (the public C API, superopt.h; verifier: proofs bound to content, issue 19)
#   cli        cli/                       core kernels rulelang verifier generator search api
#   tests      tests/                     everything
#
# Also: only verifier/ includes <z3.h>; only src/onnx_* includes the generated "onnx.pb-c.h".
# Usage: tests/check_layers.sh [ROOT]   (exit 0: all includes point down; 1: the violations listed)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1

layer_of() { # path relative to the root -> layer name, or "" for files outside the layers
    case $1 in
        src/*) echo core ;;
        kernels/*) echo kernels ;;
        rules/rule.h|rules/rule.c|rules/rule_shape.h|rules/rule_shape.c) echo rulelang ;;
        rules/*) echo generator ;;
        verifier/*) echo verifier ;;
        search/*) echo search ;;
        api/*) echo api ;;
        cli/*) echo cli ;;
        tests/*) echo tests ;;
        *) echo "" ;;
    esac
}

allowed() { # from-layer to-layer -> 0 if allowed
    [ "$1" = "$2" ] && return 0
    case $1 in
        core) return 1 ;;
        kernels) [[ $2 == core ]] ;;
        rulelang) [[ $2 == core ]] ;;
        verifier) [[ $2 =~ ^(core|kernels|rulelang)$ ]] ;;
        generator) [[ $2 =~ ^(core|kernels|rulelang|verifier)$ ]] ;;
        search) [[ $2 =~ ^(core|kernels|rulelang)$ ]] ;;
        api) [[ $2 =~ ^(core|kernels|rulelang|verifier|search)$ ]] ;;
        cli) [[ $2 != tests ]] ;;
        tests) return 0 ;;
        *) return 1 ;;
    esac
}

bad=0
while IFS= read -r f; do
    from=$(layer_of "$f")
    [ -n "$from" ] || continue
    dir=$(dirname "$f")
    while IFS= read -r line; do
        inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$line")
        [ "$inc" = "onnx.pb-c.h" ] && { [[ $f == src/onnx_* ]] || { echo "$f: includes onnx.pb-c.h (only src/onnx_* may)"; bad=1; }; continue; }
        # resolve like the compiler: next to the file, then -Isrc
        if [ -e "$dir/$inc" ]; then target=$(realpath -m --relative-to=. "$dir/$inc")
        elif [ -e "src/$inc" ]; then target=$(realpath -m --relative-to=. "src/$inc")
        else continue; fi
        to=$(layer_of "$target")
        [ -n "$to" ] || continue
        if ! allowed "$from" "$to"; then
            echo "$f: includes $target: layer '$from' may not include layer '$to' (see tests/check_layers.sh)"
            bad=1
        fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
    if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<z3\.h>' "$f" && [ "$from" != verifier ]; then
        echo "$f: includes <z3.h> (only verifier/ may)"
        bad=1
    fi
done < <(git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null || find src kernels rules verifier search api cli tests -name '*.[ch]')
if [ $bad -eq 0 ]; then echo "check_layers: every #include points down the layers"; else echo "check_layers: FAILED (includes pointing up the layers, above)"; fi
exit $bad
