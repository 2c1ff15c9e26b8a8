#!/usr/bin/env bash
# One-call GPU capture for profaudit bench (prepared on a CPU-only machine; not yet run on a GPU).
#
#   benchmarks/gpu_capture.sh [OUTDIR]        (default: sample_reports/bench_gpu)
#
# On a machine with an NVIDIA GPU, CUDA builds of torch (+ triton) and optionally jax[cuda] (+ the
# nvtx package), and Nsight Compute's `ncu` on PATH (or $NCU), it exercises every GPU path of the
# harness that the CPU tests reach only with fakes, in under 8 minutes:
#   1. records the machine read-only (nvidia-smi -q, ncu --version, framework versions);
#   2. times benchmarks/gpu_kernels.py -> OUTDIR/timing/: CUDA events behind a blocking kernel,
#      the GPU L2 flush (cold cases), NVML telemetry read in a background thread during each
#      block, the thermal cool-down path (--cool-down-below 90), real CUDA-graph capture/replay
#      (gpu_matmul, gpu_tiny_add), eager vs jitted JAX, spot checks on the device, --processes
#      auto (up to 2 processes when a noise target is missed);
#   3. writes and audits claims (Triton vs torch, CUDA graph vs eager with --intended
#      cuda_graphs, jax eager vs jit with --intended compile_mode) -> OUTDIR/timing/claims/;
#   4. runs benchmarks/gpu_sabotage.py (six torch matmul candidates, five sabotaged): bench run
#      must exit 1 with exactly the saboteurs failed -> OUTDIR/sabotage/;
#   5. measures the GPU's ceilings (bench ceilings: copy/triad/reduce bandwidth, Triton fp32 FMA,
#      fp16/bf16/tf32/fp32 GEMMs, best of N) -> OUTDIR/ceilings.json; the first ncu report of
#      step 6 is drawn against them (roofline --ceilings -> OUTDIR/ceilings_roofline.csv);
#   6. captures ncu reports with --clock-control none and the cache control that matches the
#      timing mode: NVTX start/end ranges (gpu_softmax, gpu_autograd: backward kernels launched
#      from autograd's thread; gpu_jax_matmul: the `profaudit` NVTX domain) and the kernel-name
#      filter with the harness-launch skip (gpu_tiny_add) -> OUTDIR/timing/ncu/*.ncu-rep;
#   7. checks the outcomes (OUTDIR/checks.json; exit 1 if one failed).
# It never changes GPU clocks, power limits, persistence or MIG settings: no nvidia-smi -lgc/-pl/
# -pm/-mig, no ncu --clock-control base.
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

T0=$(date +%s)
log "1/6 timing runs"
timeout 240 "${PROFAUDIT[@]}" bench run benchmarks/gpu_kernels.py -o "$OUT/timing" --max-time 1.0 --warmup-max-time 0.5 --max-samples 2000 \
  --auto-processes 2 --cool-down-below 90 --cool-down-max-time 5 --hard-time-limit 20 2>&1 | tee -a "$OUT/capture.log"
RUN_RC=${PIPESTATUS[0]}
log "bench run exit code $RUN_RC ($(( $(date +%s) - T0 )) s)"

log "2/6 claims and audits"
for b in gpu_vector_add gpu_softmax; do
  timeout 60 "${PROFAUDIT[@]}" bench compare "$OUT/timing" --baseline torch --candidate triton -k "$b" 2>&1 | tee -a "$OUT/capture.log"
done
for b in gpu_matmul gpu_tiny_add; do
  timeout 60 "${PROFAUDIT[@]}" bench compare "$OUT/timing" --baseline torch --candidate torch_graph -k "$b" --intended cuda_graphs 2>&1 | tee -a "$OUT/capture.log"
done
timeout 60 "${PROFAUDIT[@]}" bench compare "$OUT/timing" --baseline jax_eager --candidate jax -k gpu_jax_matmul --intended compile_mode 2>&1 | tee -a "$OUT/capture.log"

log "3/6 sabotaged candidates (bench run must exit 1)"
timeout 120 "${PROFAUDIT[@]}" bench run benchmarks/gpu_sabotage.py -o "$OUT/sabotage" --max-time 0.5 --warmup-max-time 0.3 --processes 1 --spot-checks 16 2>&1 | tee -a "$OUT/capture.log"
log "sabotage run exit code ${PIPESTATUS[0]} (expected 1) ($(( $(date +%s) - T0 )) s)"

log "4/6 measured ceilings (bench ceilings)"
timeout 240 "${PROFAUDIT[@]}" bench ceilings --backend torch --device cuda -o "$OUT/ceilings.json" --max-time 1.0 2>&1 | tee -a "$OUT/capture.log"
log "bench ceilings exit code ${PIPESTATUS[0]} ($(( $(date +%s) - T0 )) s)"

log "5/6 ncu reports (--clock-control none)"
if [ -z "$NCU_BIN" ]; then
  log "ncu not found: skipping the reports; the commands would be:"
  "${PROFAUDIT[@]}" ncu-command benchmarks/gpu_kernels.py -o "$OUT/timing" 2>&1 | tee -a "$OUT/capture.log"
else
  for k in gpu_softmax gpu_autograd gpu_jax_matmul; do
    timeout 150 "${PROFAUDIT[@]}" bench ncu benchmarks/gpu_kernels.py -o "$OUT/timing" -k "$k" --ncu "$NCU_BIN" --clock-control none --warmup 3 --calls 1 --timeout 120 2>&1 | tee -a "$OUT/capture.log"
    log "bench ncu -k $k exit code ${PIPESTATUS[0]} ($(( $(date +%s) - T0 )) s)"
  done
  timeout 120 "${PROFAUDIT[@]}" bench ncu benchmarks/gpu_kernels.py -o "$OUT/timing" -k gpu_tiny_add --variant torch --filter kernel --kernel-name elementwise \
    --ncu "$NCU_BIN" --clock-control none --warmup 3 --calls 2 --timeout 100 2>&1 | tee -a "$OUT/capture.log"
  log "bench ncu (kernel filter) exit code ${PIPESTATUS[0]} ($(( $(date +%s) - T0 )) s)"
  for rep in "$OUT"/timing/ncu/*.ncu-rep; do
    [ -f "$rep" ] || continue
    timeout 60 "${PROFAUDIT[@]}" kernels "$rep" -f csv > "${rep%.ncu-rep}.kernels.csv" 2>>"$OUT/capture.log" || true
  done
  # the ncu kernels (same GPU) on the roofline of the ceilings measured in step 4
  REP_ONE=$(ls "$OUT"/timing/ncu/*.ncu-rep 2>/dev/null | head -1)
  if [ -n "$REP_ONE" ] && [ -f "$OUT/ceilings.json" ]; then
    timeout 60 "${PROFAUDIT[@]}" roofline "$REP_ONE" --ceilings "$OUT/ceilings.json" --format csv -o "$OUT/ceilings_roofline.csv" 2>&1 | tee -a "$OUT/capture.log"
    log "roofline --ceilings exit code ${PIPESTATUS[0]}"
  fi
fi

log "6/6 checks"
"$PY" benchmarks/gpu_capture_checks.py "$OUT" 2>&1 | tee -a "$OUT/capture.log"
CHECK_RC=${PIPESTATUS[0]}
du -sh "$OUT" | tee -a "$OUT/capture.log"
log "done in $(( $(date +%s) - T0 )) s: see $OUT/timing/manifest.json and $OUT/checks.json"
exit "$CHECK_RC"
