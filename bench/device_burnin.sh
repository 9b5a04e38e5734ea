#!/usr/bin/env bash
# Run the burn-in agent against a REAL NVIDIA driver (the project's device machine: one
# H200) with a quick plan of the checks that exist there, and leave the result JSON in
# $OUT (or ./device-out). Prepared for the `run` tool; not a test. Usage:
#   bash bench/device_burnin.sh
set -euo pipefail
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
PY="$(command -v python3)"
"$PY" -c "import pynvml" 2>/dev/null || "$PY" -m pip install -q nvidia-ml-py
nvidia-smi -L > "$OUT/nvidia-smi-L.txt" 2>&1 || true
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1 || true
cat > "$OUT/plan.json" <<'JSON'
{
  "schema_version": 1,
  "node": "device-h200",
  "sku": "device",
  "profile": "quick",
  "checks": ["inventory", "ecc", "nvlink", "pcie", "clocks", "xid"],
  "expect": {"gpu_count": 1, "gpu_name": "NVIDIA H200", "ecc": "enabled"},
  "limits": {"max_temp_c": 87, "max_ecc_uncorrected": 0, "max_nvlink_errors": 0,
             "fatal_xids": [48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120]},
  "durations": {"sample_interval_s": 0.2, "telemetry_s": 3.0, "xid_wait_ms": 200},
  "check_timeouts_s": {"inventory": 60, "ecc": 60, "nvlink": 60, "pcie": 60, "clocks": 60, "xid": 60},
  "kernel_log": {}
}
JSON
set +e
timeout 240 "$PY" -m burnin run --plan "$OUT/plan.json" --out "$OUT/result.json" > "$OUT/stdout.json" 2> "$OUT/stderr.txt"
echo "agent exit: $?" | tee "$OUT/rc.txt"
tail -20 "$OUT/stderr.txt"
"$PY" - "$OUT/result.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    print(f'{c["name"]:10s} {c["status"]:12s} {c["summary"][:100]}')
PY
