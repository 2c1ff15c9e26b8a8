#!/usr/bin/env bash
# One-call GPU capture for profaudit bench (prepared on a CPU-only machine; untested on a GPU).
#
#   benchmarks/gpu_capture.sh [OUTDIR]        (default: sample_reports/bench_gpu)
#
# On a machine with an NVIDIA GPU, CUDA builds of torch (+ triton) and optionally jax[cuda],
# and Nsight Compute's `ncu` on PATH (or $NCU), it:
#   1. records the machine read-only (nvidia-smi -q, ncu --version, pip freeze excerpt);
#   2. times benchmarks/gpu_kernels.py (torch fp16 matmul, Triton vector add and softmax vs torch,
#      JAX fp32 matmul) with cold L2, CUDA events, NVML telemetry -> OUTDIR/timing/;
#   3. writes and audits the Triton-vs-torch claims -> OUTDIR/timing/claims/;
#   4. captures one ncu report per case and variant with --clock-control none and the cache
#      control that matches the timing mode -> OUTDIR/timing/ncu/*.ncu-rep.
# It never changes GPU clocks, power limits, persistence or MIG settings: no nvidia-smi -lgc/-pl/
# -pm/-mig, no ncu --clock-control base. Budget: a few minutes (each case is capped at 1.5 s of
# timing; ncu replays one call per kernel).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-sample_reports/bench_gpu}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PROFAUDIT=("$PY" -m profaudit)
mkdir -p "$OUT"
log() { printf '[gpu_capture] %s\n' "$*" | tee -a "$OUT/capture.log"; }
: > "$OUT/capture.log"

log "python: $PY ($("$PY" --version 2>&1))"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  log "no nvidia-smi: this script needs an NVIDIA GPU"; exit 2
fi
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1 || true
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,mig.mode.current --format=csv > "$OUT/gpu.csv" 2>&1 || true
NCU_BIN=${NCU:-$(command -v ncu || true)}
if [ -n "$NCU_BIN" ]; then "$NCU_BIN" --version > "$OUT/ncu-version.txt" 2>&1 || true; fi
"$PY" - > "$OUT/frameworks.json" 2>&1 <<'PYEOF'
import json
out = {}
try:
    import torch
    out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
except Exception as exc:
    out["torch"] = {"error": repr(exc)}
try:
    import triton
    out["triton"] = {"version": triton.__version__}
except Exception as exc:
    out["triton"] = {"error": repr(exc)}
try:
    import jax
    out["jax"] = {"version": jax.__version__, "devices": [str(d) for d in jax.devices()]}
except Exception as exc:
    out["jax"] = {"error": repr(exc)}
print(json.dumps(out, indent=1))
PYEOF
cat "$OUT/frameworks.json" | tee -a "$OUT/capture.log"
unset TRITON_INTERPRET

log "1/3 timing runs"
"${PROFAUDIT[@]}" bench run benchmarks/gpu_kernels.py -o "$OUT/timing" --max-time 1.5 --warmup-max-time 0.5 --max-samples 2000 2>&1 | tee -a "$OUT/capture.log"
RUN_RC=${PIPESTATUS[0]}
log "bench run exit code $RUN_RC"

log "2/3 claims and audits"
for b in gpu_vector_add gpu_softmax; do
  "${PROFAUDIT[@]}" bench compare "$OUT/timing" --baseline torch --candidate triton -k "$b" 2>&1 | tee -a "$OUT/capture.log"
done

log "3/3 ncu reports (--clock-control none)"
if [ -z "$NCU_BIN" ]; then
  log "ncu not found: skipping the reports; the commands would be:"
  "${PROFAUDIT[@]}" ncu-command benchmarks/gpu_kernels.py -o "$OUT/timing" 2>&1 | tee -a "$OUT/capture.log"
else
  "${PROFAUDIT[@]}" bench ncu benchmarks/gpu_kernels.py -o "$OUT/timing" --ncu "$NCU_BIN" --clock-control none --warmup 3 --calls 1 --timeout 240 2>&1 | tee -a "$OUT/capture.log"
  log "bench ncu exit code ${PIPESTATUS[0]}"
  for rep in "$OUT"/timing/ncu/*.ncu-rep; do
    [ -f "$rep" ] || continue
    "${PROFAUDIT[@]}" kernels "$rep" -f csv > "${rep%.ncu-rep}.kernels.csv" 2>>"$OUT/capture.log" || true
  done
fi
du -sh "$OUT" | tee -a "$OUT/capture.log"
log "done: see $OUT/timing/manifest.json"
