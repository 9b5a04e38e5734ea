"""Judge a burn-in result: pure policy, no I/O.

``judge(result, thresholds, peers, bmc_serials, previous_ecc)`` turns the agent's document
into a verdict:

- ``fail`` when any check failed or errored, or a metric breaks a threshold rule;
- ``incomplete`` when nothing failed but a required check is missing, skipped or
  unsupported, a metric a rule needs is absent, or the agent was stopped before its end
  (a partial document: the reason names the step that did not finish): never ``pass`` on
  partial evidence;
- ``pass`` otherwise.

Every reason names the check, says what was seen and suggests a remediation. ``notes``
hold what is reported but not judged: lifetime ECC counts that grew since the previous
burn-in (the trend), serial mismatches when the data says they only warrant a note, and
BMC serials that identify no GPU (placeholders, a board's serial shared by its GPUs), which
are left out of the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from bringup.acceptance.gpu_serials import compare as compare_serials
from bringup.acceptance.peers import FigureCheck
from bringup.acceptance.peers import compare as compare_peers
from bringup.acceptance.result import BurnInResult, CheckOutcome, Finding
from bringup.acceptance.thresholds import Rule, SkuThresholds
from bringup.errors import ConfigError

VerdictStatus = Literal["pass", "fail", "incomplete"]


class Reason(BaseModel):
    check: str
    code: str
    message: str
    remediation: str
    blocking: Literal["fail", "incomplete"] = "fail"


class Note(BaseModel):
    """Something the operator should see that does not decide the verdict."""

    check: str
    code: str
    message: str


class Verdict(BaseModel):
    status: VerdictStatus
    reasons: list[Reason]
    notes: list[Note] = []
    #: evidence that is suspect but does not decide the verdict under the data's policy
    #: (e.g. unreadable ibstat while sysfs looks fine): shown with the verdict, never silent
    warnings: list[Note] = []
    #: each figure against the peers and the node's last accepted burn-in (bringup.acceptance.peers)
    peer_checks: list[FigureCheck] = []

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def text(self) -> str:
        if not self.reasons:
            return self.status
        return f"{self.status}: " + "; ".join(f"[{r.check}] {r.message} -> {r.remediation}" for r in self.reasons)


# remediation per finding/rule code; {gpu} {link} {port} {tool} {test} {component} {limit}
# {value} are filled from the finding
REMEDIATION = {
    "gpu_count_mismatch": "reseat or RMA the missing GPU (find the empty slot in the BMC's PCIe inventory), "
                          "then re-run burn-in",
    "gpu_model_mismatch": "the wrong GPU model is installed: fix the device type in NetBox or swap the GPU",
    "gpu_memory_mismatch": "GPU {gpu} reports less memory than its SKU: RMA GPU {gpu}",
    "ecc_disabled": "enable ECC on GPU {gpu} (nvidia-smi -i {gpu} -e 1) and reset the GPU or reboot",
    "ecc_pending": "reset GPU {gpu} (nvidia-smi -i {gpu} -r) or reboot to apply the pending ECC mode",
    "ecc_uncorrectable": "RMA GPU {gpu}: uncorrectable ECC errors",
    "ecc_corrected_high": "watch GPU {gpu}: corrected ECC errors above the limit; RMA if they keep rising",
    "row_remap_pending": "reset GPU {gpu} (or reboot) to apply the pending row remapping, then re-run burn-in",
    "row_remap_failure": "RMA GPU {gpu}: row remapping failed, no spare rows left",
    "retired_pages_pending": "reboot to retire the pending pages on GPU {gpu}",
    "pcie_downtrained": "reseat GPU {gpu} and check its riser/slot and the BIOS PCIe link settings",
    "pcie_replays": "check PCIe signal integrity of GPU {gpu}: reseat, check the riser",
    "nvlink_down": "reseat GPU {gpu}; if NVLink {link} stays down, RMA the GPU or the NVSwitch baseboard",
    "nvlink_missing": "GPU {gpu} has fewer NVLinks than its SKU: reseat or RMA it",
    "nvlink_errors": "NVLink {link} of GPU {gpu} shows errors: reseat GPU {gpu}, RMA if errors persist",
    "thermal_slowdown": "check cooling of GPU {gpu}: fans, airflow, inlet temperature, heatsink contact",
    "temperature_high": "check cooling of GPU {gpu}: fans, airflow, inlet temperature, heatsink contact",
    "power_brake": "check the PSUs and power feeds: the hardware power brake fired (PSU redundancy lost?)",
    "hw_slowdown": "check power delivery and cooling of GPU {gpu} (hardware slowdown asserted)",
    "xid_fatal": "fatal XID {value} on GPU {gpu}: reseat/RMA GPU {gpu} after checking the NVIDIA XID catalogue",
    "dcgm_failed": "DCGM {test} failed: review the DCGM warning, then reseat or RMA the GPU it names",
    "dcgm_not_run": "DCGM {test} did not run: check the DCGM install and diag config, then re-run burn-in",
    "dcgm_runtime_error": "DCGM could not run (is nv-hostengine up?): fix DCGM and re-run burn-in",
    "gpuburn_faulty": "RMA GPU {gpu}: computation errors under gpu-burn",
    "gpuburn_died": "GPU {gpu} stopped responding under gpu-burn: check dmesg for XIDs, reseat or RMA",
    "gpuburn_aborted": "gpu-burn could not load the GPUs: check the driver and CUDA install",
    "gpuburn_gpu_count": "gpu-burn saw fewer GPUs than expected: reseat or RMA the missing GPU",
    "busbw_low": "all_reduce bandwidth below the SKU gate: check NVSwitch trays and fabric manager "
                 "(nv-fabricmanager running?), NVLink errors, then re-run",
    "busbw_below_peers": "all_reduce bandwidth well below identical nodes: check NVSwitch trays, NVLink errors "
                         "and GPU clocks on this node",
    "gflops_below_peers": "gpu-burn throughput well below identical nodes: look for the slow GPU (clocks, "
                          "thermal or power slowdown, PCIe link) in the evidence, reseat or RMA it",
    "max_temp_above_peers": "this node runs hotter than identical nodes: check fans, airflow, blanking panels "
                            "and heatsink contact",
    "max_power_above_peers": "this node draws more power than identical nodes: check GPU clocks and power "
                             "limits (nvidia-smi -q -d POWER) and the PSUs",
    "busbw_below_baseline": "all_reduce bandwidth dropped since this node's last accepted burn-in: check NVSwitch "
                            "trays, fabric manager and NVLink errors, and what changed (driver, firmware)",
    "gflops_below_baseline": "gpu-burn throughput dropped since this node's last accepted burn-in: check clocks, "
                             "slowdown reasons and what changed (driver, firmware)",
    "max_temp_above_baseline": "this node runs hotter than at its last accepted burn-in: check fans, filters and "
                               "airflow",
    "max_power_above_baseline": "this node draws more power than at its last accepted burn-in: check power limits "
                                "and what changed (driver, firmware)",
    "nccl_wrong": "all_reduce produced wrong values: run dcgmi diag -r 3 to find the bad GPU and RMA it",
    "nccl_oob": "all_reduce produced out-of-bounds values: run dcgmi diag -r 3 to find the bad GPU and RMA it",
    "nccl_failed": "all_reduce_perf failed: check NCCL install and GPU health",
    "nccl_launcher_failed": "a rank of all_reduce_perf exited non-zero or on a signal: check dmesg for XIDs on the "
                            "node the launcher names and the NCCL install, then re-run",
    "nccl_incomplete": "all_reduce_perf stopped before its summary (the run did not finish): check dmesg for "
                       "XIDs and a hung GPU, then re-run burn-in",
    "dcgm_required_missing": "DCGM {test} is required for this SKU but did not run: install its plugin (the "
                             "DCGM packages of the image) or fix the run level, then re-run burn-in",
    "ib_port_down": "IB port {port} is down: check cable, transceiver and the switch port",
    "ib_rate_low": "IB port {port} trained at {value} Gb/s: reseat/replace the cable or transceiver",
    "ib_port_missing": "fewer IB ports than the SKU has: check the HCAs are seated and the driver loaded",
    "ib_state_disagree": "sysfs and ibstat disagree on {port}: check the OFED/rdma-core install",
    "net_down": "interface {port} is down: check cabling and switch port",
    "driver_mismatch": "reinstall the pinned driver {limit} (run the configure playbook), then re-run burn-in",
    "driver_missing": "install the pinned NVIDIA driver (run the configure playbook)",
    "cuda_mismatch": "the driver does not support the pinned CUDA {limit}: reinstall the pinned driver",
    "cuda_missing": "the CUDA driver version is unreadable: reinstall the pinned driver",
    "nccl_mismatch": "reinstall the pinned NCCL {limit} (run the configure playbook), then re-run burn-in",
    "nccl_missing": "install the pinned NCCL (libnccl2) with the configure playbook",
    "kernel_mismatch": "boot the pinned kernel {limit} (reinstall the image or fix the GRUB default)",
    "kernel_missing": "the kernel version could not be read: check the node",
    "version_mismatch": "reinstall the pinned software stack with the configure playbook",
    "stress_failed": "CPU/memory stress failed: check DIMMs (BMC SEL, EDAC counters) and CPU health",
    "fio_failed": "disk test failed: check the boot/scratch disk (SMART, dmesg)",
    "disk_slow": "disk writes too slow: check the disk and its controller",
    "tool_missing": "install {tool} on the node (image or configure playbook), then re-run burn-in",
    "tool_timeout": "{tool} hung and was killed: check GPU health (dmesg, XIDs) and the {tool} install, then re-run",
    "tool_crashed": "{tool} crashed: check its install and the GPU health, then re-run burn-in",
    "unparseable_output": "{tool} printed output the agent cannot read: check the tool version against the "
                          "image manifest",
    "nvml_unavailable": "the NVIDIA driver is not loaded: reinstall the pinned driver and reboot",
    "nvml_error": "NVML failed: check dmesg for XIDs and the driver install",
    "check_timeout": "the check hung: check GPU health (dmesg) and re-run burn-in",
    "check_crashed": "the agent's check crashed: file a bug with the evidence; re-run burn-in",
    "unknown_check": "deploy the agent version that matches this controller",
    "xid_no_source": "make the kernel log readable by the agent (run it as root) and re-run",
    "missing_check": "re-run burn-in: this check was required but is not in the result",
    "not_run": "re-run burn-in with this check; a check that did not run proves nothing",
    "missing_metric": "re-run burn-in; the agent did not report this figure",
    "gpuburn_no_work": "GPU {gpu} never ran its gpu-burn test: check dmesg for XIDs and the CUDA install; "
                       "reseat or RMA GPU {gpu} if it persists",
    "gpuburn_init_failed": "a gpu-burn test could not start: check the CUDA/cuBLAS install and dmesg, then re-run",
    "gpuburn_no_progress": "gpu-burn printed no progress: the work is unverified; check the gpu-burn build and re-run",
    "gpuburn_unfinished": "gpu-burn stopped before its summary: check dmesg and re-run burn-in",
    "nccl_error_high": "the collective's results drifted beyond the data type's tolerance: run dcgmi diag -r 3 "
                       "to find the bad GPU and RMA it",
    "nccl_error_unjudged": "run nccl-tests with a data type that has an error limit in thresholds.yaml",
    "nccl_not_validated": "run nccl-tests with validation on (-c 1): unchecked results prove nothing",
    "ecc_lifetime_limit": "RMA GPU {gpu}: its lifetime ECC counts are above the limit",
    "row_remap_high": "RMA GPU {gpu}: too many rows remapped for uncorrectable errors",
    "gpu_serial_mismatch": "a GPU was swapped since discovery (or the BMC misreports): rerun discovery, check the "
                           "RMA record, then re-run burn-in",
    "unfinished": "the burn-in stopped before its end (time budget spent or the agent was killed): look at the "
                  "unfinished step's tool and the node's dmesg, then re-run burn-in",
    "not_reached": "re-run burn-in: the run stopped before this check",
    "ib_port_unreadable": "ibstat output was cut: re-run it; check the OFED install",
    "ibstat_panic": "ibstat could not read an HCA: check the HCA is present and the OFED install",
    "ib_no_device": "ibstat found no IB device: check the HCAs are seated and the mlx5/ib_umad drivers loaded",
    "ibstat_unreadable": "ibstat's output could not be read while sysfs looks fine: check the OFED/rdma-core "
                         "install (ibstat, umad) and run ibstat by hand on the node",
}
#: what unreadable secondary evidence weighs (thresholds.yaml ``ibstat_unreadable``)
POLICIES = ("warn", "fail", "ignore")
DEFAULT_REMEDIATION = "investigate the evidence in the result document, then re-run burn-in"


class _Fmt(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def remediation(code: str, where: dict[str, Any] | None = None) -> str:
    template = REMEDIATION.get(code, DEFAULT_REMEDIATION)
    return template.format_map(_Fmt({k: v for k, v in (where or {}).items() if v is not None}))


def _from_finding(check: str, f: Finding) -> Reason:
    return Reason(check=check, code=f.code, message=f.message,
                  remediation=remediation(f.code, f.model_dump()), blocking="fail")


def _rule_reason(rule: Rule, check: CheckOutcome, actual: Any, values: dict[str, Any]) -> Reason:
    limit = rule.limit(values)
    shown = limit if not isinstance(limit, list) or len(limit) < 6 else f"{len(limit)} listed values"
    msg = f"{rule.metric} = {actual!r}, must be {rule.op} {shown}"
    where: dict[str, Any] = {"value": actual, "limit": limit}
    # borrow gpu/port/... from the check's own finding with the same code, if any
    for f in check.problems():
        if f.code == rule.code:
            where.update({k: v for k, v in f.model_dump().items() if v is not None and k not in where})
            break
    return Reason(check=check.name, code=rule.code, message=msg, remediation=remediation(rule.code, where))


def _peer_outcomes(result: BurnInResult, thresholds: SkuThresholds, peers: Sequence[Any] | None,
                   baseline: dict[str, Any] | None) -> tuple[list[FigureCheck], list[Reason], list[Note], list[Note]]:
    """Figures against peers and the node's own baseline (:mod:`bringup.acceptance.peers`): an outlier is
    a reason or a warning as the YAML says; a skipped comparison is a note, so it shows."""
    named = [p if isinstance(p, tuple) else (getattr(p.node, "name", "") or f"peer {i + 1}", p)
             for i, p in enumerate(peers or [])]
    report = compare_peers(result, thresholds.peers, named if peers is not None else None, baseline)
    reasons, notes, warnings = [], [], []
    for c in report.checks:
        if c.outcome == "outlier" and c.action == "fail":
            reasons.append(Reason(check=c.check, code=c.code or "", message=c.message,
                                  remediation=remediation(c.code or "")))
        elif c.outcome == "outlier":
            warnings.append(Note(check=c.check, code=c.code or "", message=c.message))
    skipped = [c.message for c in report.checks if c.outcome == "skipped" and c.against == "peers"]
    if skipped:
        notes.append(Note(check="peers", code="peers_skipped", message="compared with no peers: " + "; ".join(skipped)))
    warnings += [Note(check="peers", code="peer_unreadable", message=f) for f in report.findings]
    return report.checks, reasons, notes, warnings


def _serial_reasons(result: BurnInResult, thresholds: SkuThresholds,
                    bmc_serials: Sequence[str | None]) -> tuple[list[Reason], list[Note]]:
    """The BMC's GPU serials (recorded at discovery) against NVML's (:mod:`.gpu_serials`);
    how much a difference weighs is data (``gpu_serial_mismatch`` in thresholds.yaml: fail,
    incomplete or info). BMC serials that identify no GPU (placeholders, a board's serial)
    are not compared: a note says so, never a mismatch."""
    if result.check("inventory") is None:
        return [], []  # the missing inventory check is its own reason
    cmp = compare_serials(result.serials(), bmc_serials)
    notes = [Note(check="inventory", code="gpu_serial_not_compared", message=cmp.not_compared)
             ] if cmp.not_compared else []
    msg = cmp.mismatch
    if msg is None:
        return [], notes
    severity = str(thresholds.value("gpu_serial_mismatch", "fail"))
    if severity == "info":
        return [], [*notes, Note(check="inventory", code="gpu_serial_mismatch", message=msg)]
    return [Reason(check="inventory", code="gpu_serial_mismatch", message=msg,
                   remediation=remediation("gpu_serial_mismatch"),
                   blocking="incomplete" if severity == "incomplete" else "fail")], notes


def _ibstat_reasons(result: BurnInResult, thresholds: SkuThresholds) -> tuple[list[Reason], list[Note]]:
    """ibstat is a second opinion on the IB ports; sysfs is the first. Output that cannot be
    read while sysfs shows ports is suspect evidence: how much it weighs is data
    (``ibstat_unreadable`` in thresholds.yaml: warn, fail or ignore; default warn)."""
    c = result.check("network")
    if c is None or c.status in ("skip", "unsupported") or not c.data.get("ib_ports"):
        return [], []
    err = c.data.get("ibstat_error")
    if not err:
        return [], []
    policy = str(thresholds.value("ibstat_unreadable", "warn"))
    if policy not in POLICIES:
        raise ConfigError(f"thresholds.yaml: ibstat_unreadable is {policy!r}, not one of {', '.join(POLICIES)}",
                          hint="fix bringup/data/thresholds.yaml")
    msg = f"ibstat could not be read while sysfs shows {len(c.data['ib_ports'])} IB port(s): {err}"
    if policy == "fail":
        return [Reason(check="network", code="ibstat_unreadable", message=msg,
                       remediation=remediation("ibstat_unreadable"))], []
    return [], [] if policy == "ignore" else [Note(check="network", code="ibstat_unreadable", message=msg)]


def ecc_aggregate(result: BurnInResult) -> dict[str, list[int | None]]:
    """Lifetime ECC counts per GPU from the ecc check, for the trend between burn-ins."""
    c = result.check("ecc")
    gpus = c.data.get("gpus", []) if c is not None else []
    return {k: [g.get(f"{k}_aggregate") if isinstance(g, dict) else None for g in gpus]
            for k in ("uncorrected", "corrected")}


def _trend_notes(result: BurnInResult, previous: dict[str, Any]) -> list[Note]:
    notes = []
    now = ecc_aggregate(result)
    for kind, values in now.items():
        before = previous.get(kind) or []
        for gpu, (a, b) in enumerate(zip(values, before, strict=False)):
            if isinstance(a, int) and isinstance(b, int) and a > b:
                notes.append(Note(check="ecc", code="ecc_aggregate_grew",
                                  message=f"GPU {gpu}: lifetime {kind} ECC errors grew from {b} to {a} since the "
                                          "previous burn-in"))
    return notes


def judge(result: BurnInResult, thresholds: SkuThresholds,
          peers: Sequence[BurnInResult] | None = None, *, bmc_serials: Sequence[str | None] | None = None,
          previous_ecc: dict[str, Any] | None = None, baseline: dict[str, Any] | None = None) -> Verdict:
    """``peers``: other nodes' results or ``(name, document)`` pairs (None: not compared);
    ``baseline``: figures of the node's last accepted burn-in (``{}``: none yet; None: not
    compared)."""
    reasons: list[Reason] = []
    notes: list[Note] = []
    seen: set[tuple[str, str, str]] = set()

    def add(r: Reason) -> None:
        key = (r.check, r.code, r.message)
        if key not in seen:
            seen.add(key)
            reasons.append(r)

    if result.partial:
        step = result.unfinished or "an unknown step"
        how = f" ({result.stopped})" if result.stopped else ""
        add(Reason(check=step, code="unfinished", blocking="incomplete", remediation=remediation("unfinished"),
                   message=f"the burn-in did not finish: it stopped during {step}{how}; "
                           f"{len(result.checks)} checks finished before"))
    not_reached = set(result.pending) if result.partial else set()
    required = list(dict.fromkeys(list(thresholds.required_checks) + result.planned_checks))
    for name in required:
        c = result.check(name)
        if c is None and result.partial and name in not_reached | {result.running}:
            if name != result.running:
                add(Reason(check=name, code="not_reached", message=f"check {name} was not reached",
                           remediation=remediation("not_reached"), blocking="incomplete"))
        elif c is None:
            add(Reason(check=name, code="missing_check", message=f"required check {name} is not in the result",
                       remediation=remediation("missing_check"), blocking="incomplete"))
        elif c.status in ("skip", "unsupported"):
            add(Reason(check=name, code="not_run", message=f"required check {name} was {c.status}: "
                       f"{c.summary or 'no reason given'}", remediation=remediation("not_run"), blocking="incomplete"))
    for c in result.checks:
        if c.status in ("fail", "error"):
            problems = c.problems()
            for f in problems:
                add(_from_finding(c.name, f))
            if not problems:
                add(Reason(check=c.name, code=f"{c.name}_{c.status}", message=c.summary or f"{c.name} {c.status}",
                           remediation=DEFAULT_REMEDIATION))
    by_check_code = {(r.check, r.code) for r in reasons}
    for rule in thresholds.rules:
        c = result.check(rule.check)
        if c is None or c.status in ("skip", "unsupported", "error"):
            continue  # already a reason above (missing/not run/error)
        if rule.summary and c.status != "pass":
            continue  # the check's own findings are the better reasons
        actual = c.metrics.get(rule.metric)
        if actual is None:
            if not rule.optional and c.status == "pass":
                add(Reason(check=c.name, code="missing_metric", message=f"metric {rule.metric} is missing",
                           remediation=remediation("missing_metric"), blocking="incomplete"))
            continue
        try:
            ok = rule.holds(actual, thresholds.values)
        except TypeError:
            ok = False
        if not ok and (c.name, rule.code) not in by_check_code:
            add(_rule_reason(rule, c, actual, thresholds.values))
    peer_checks, peer_reasons, peer_notes, peer_warnings = _peer_outcomes(result, thresholds, peers, baseline)
    for r in peer_reasons:
        add(r)
    notes += peer_notes
    if bmc_serials:
        serial_reasons, serial_notes = _serial_reasons(result, thresholds, bmc_serials)
        for r in serial_reasons:
            add(r)
        notes += serial_notes
    if previous_ecc:
        notes += _trend_notes(result, previous_ecc)
    ib_reasons, warnings = _ibstat_reasons(result, thresholds)
    warnings = warnings + peer_warnings
    for r in ib_reasons:
        add(r)
    if any(r.blocking == "fail" for r in reasons):
        status: VerdictStatus = "fail"
    elif reasons:
        status = "incomplete"
    else:
        status = "pass"
    # failures first: they are what an operator acts on
    reasons.sort(key=lambda r: r.blocking != "fail")
    return Verdict(status=status, reasons=reasons, notes=notes, warnings=warnings, peer_checks=peer_checks)
