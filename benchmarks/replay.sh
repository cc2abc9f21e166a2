#!/usr/bin/env bash
# Process replay for refactors: analyse every bundled sample with the CLI and write one
# normalised JSON report per sample (run-dependent fields removed), so two trees can be
# compared with `diff -r`. Usage: benchmarks/replay.sh OUT_DIR [SOLAR_SOURCE_ROOT]
# With SOLAR_SOURCE_ROOT, that tree's `solar` package is imported instead of this one.
set -euo pipefail
out=$(realpath -m "$1")
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
py=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
mkdir -p "$out"
cd "$root"
one() {
  f=$1; name=$(echo "$f" | tr '/' '_')
  extra=()
  case "$f" in samples/llm/*) extra=(--frontend llm --model recorded --llm-cache-dir samples/llm/cache);; esac
  PYTHONPATH="$root" OPENAI_BASE_URL=http://127.0.0.1:9 OPENAI_API_KEY=x \
    "$py" -m solar analyze "$f" --arch H100_SXM --arch A100_SXM_80GB "${extra[@]}" \
    --output "$out/$name.json" >/dev/null 2>"$out/$name.err"; echo "rc=$?" >> "$out/$name.err"
  if [ -f "$out/$name.json" ]; then
    "$py" - "$out/$name.json" <<'PY'
import json, sys
p = sys.argv[1]
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("wall_time_s",)}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
d = strip(json.load(open(p)))
json.dump(d, open(p, "w"), indent=1, sort_keys=True)
PY
  fi
}
export -f one; export out root py
ls samples/ir/*.alir samples/torch/*.py samples/jax/*.py samples/llm/*.py | grep -v record.py \
  | xargs -P "${JOBS:-2}" -I{} bash -c 'one {}'
