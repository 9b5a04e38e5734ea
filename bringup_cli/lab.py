"""``bringup lab``: run the embedded lab (real NetBox + Prefect, simulated hardware)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.table import Table

from bringup.netbox.schema import load_schema
from bringup.netbox.schema_apply import apply_schema
from bringup.sku import load_skus, nic_counts

from .common import console, netbox, settings

app = typer.Typer(no_args_is_help=True)
check_app = typer.Typer(no_args_is_help=True, help="Run conformance checks against the lab's simulators.")
app.add_typer(check_app, name="check")


class _RichSteps:
    """A terminal's view of the lab's steps: a spinner on the running one, a line with
    its time as each ends (lab.steps.Reporter)."""

    def __init__(self, status) -> None:
        self.status = status

    def start(self, step: str) -> None:
        self.status.update(f"{step} ...")

    def note(self, text: str) -> None:
        console.print(f"  [dim]{text}[/]", highlight=False)

    def done(self, step: str, seconds: float) -> None:
        console.print(f"[green]✓[/] {step} [dim]{seconds:.1f} s[/]", highlight=False)

    def failed(self, step: str, seconds: float) -> None:
        console.print(f"[red]✗ {step} failed after {seconds:.1f} s[/]", highlight=False)


@contextmanager
def _steps(title: str):
    """A reporter of the lab's steps: rich on a terminal, else plain lines
    (``lab: <step> ... done in 12.3 s``) that a CI log keeps as they come."""
    if console.is_terminal:
        with console.status(title) as status:
            yield _RichSteps(status)
    else:
        from lab.steps import PlainLines
        yield PlainLines(lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))


def _lab(fleet: Path | None = None, prefect_db: str | None = None):
    from lab.supervisor import Lab  # the lab is optional at import time for the rest of the CLI
    return Lab(fleet_path=fleet, prefect_db=prefect_db)


@app.command()
def up(fleet: Path = typer.Option(None, help="Fleet profile (default: the last one used, else lab/fleets/default.yaml)."),
       sims: bool = typer.Option(True, help="Also start the simulated hardware (BMCs, nodes, Kubernetes API)."),
       workers: int = typer.Option(None, min=1, help="Batch workers taking the child runs of large commissions "
                                                     "(default: as many as last time, else 1)."),
       prefect_db: str = typer.Option(None, help="Prefect server database: postgresql (default) or sqlite.")) -> None:
    """Start (or finish starting) every lab service. Safe to run twice."""
    if prefect_db not in (None, "postgresql", "sqlite"):
        raise typer.BadParameter("--prefect-db is postgresql or sqlite")
    lab = _lab(fleet, prefect_db)
    t0 = time.monotonic()
    with _steps("starting the lab") as report:
        lab.up(report, with_sims=sims, workers=workers)
    console.print(f"lab up in {time.monotonic() - t0:.1f}s; settings in {lab.paths.config}")
    _print_status(lab)


@app.command()
def prepare() -> None:
    """Install what the lab needs and build NetBox's pristine database (restored from
    lab/netbox-db/, else migrated), serving nothing yet; each step is printed with its time."""
    lab = _lab()
    t0 = time.monotonic()
    with _steps("preparing the lab") as report:
        timings = lab.prepare(report)
    console.print("lab prepared in " + f"{time.monotonic() - t0:.1f}s (" +
                  ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()) + ")", highlight=False, soft_wrap=True)


@app.command()
def down() -> None:
    """Stop every lab service (data stays; `lab up` resumes)."""
    stopped = _lab().down()
    console.print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


def _print_status(lab) -> bool:
    """The services in a table; where their credentials are kept below it, one line each.

    The paths are not a table column: rich cuts or folds a column to the console's width (80
    when piped), and a path cut short or broken over lines cannot be copied. Printed with
    ``soft_wrap`` they reach the terminal whole, however narrow it is."""
    table = Table("service", "state", "URL")
    table.columns[2].overflow = "fold"  # a narrow console folds a URL, never cuts it with "…"
    all_up = True
    rows = lab.status()
    for row in rows:
        state = {True: "[green]up[/]", False: "[red]down[/]", None: "[dim]n/a[/]"}[row["up"]]
        if row["up"] is None and row["credentials"] not in ("", "-"):
            state += f" ({row['credentials']})"  # why there is none (not built yet), not a path
        all_up &= row["up"] is not False
        table.add_row(row["service"], state, row["url"])
    console.print(table)
    kept = [(row["service"], row["credentials"]) for row in rows
            if row["up"] is not None and row["credentials"] not in ("", "-")]
    if kept:
        console.print("credentials kept in:")
        for service, where in kept:
            console.print(f"  {service}: {where}", soft_wrap=True, markup=False, highlight=False)
    return all_up


@app.command()
def status() -> None:
    """Each service, its URL and where its credentials are kept (never the secrets)."""
    if not _print_status(_lab()):
        raise typer.Exit(1)


@app.command()
def seed(fleet: Path = typer.Option(None, help="Fleet profile to write to NetBox."),
         config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Write the fleet profile to NetBox: devices in status planned, with MACs and BMC IPs."""
    lab = _lab(fleet)
    skus = load_skus()
    from lab.fleet import load_fleet  # the lab only inside lab commands: a wheel has none
    profile = load_fleet(lab.fleet_path, nic_counts(skus))
    from lab.seed import seed as seed_fleet
    nb = netbox(settings(config))
    apply_schema(nb, load_schema())
    report = seed_fleet(nb, profile, skus)
    console.print(f"site {profile.site}: {len(report.created)} devices created, {len(report.existing)} already "
                  f"there, {report.macs} MAC addresses added")


@check_app.command("redfish")
def check_redfish(node: str = typer.Option(None, help="Node whose BMC to validate (default: the first).")) -> None:
    """Run DMTF's Redfish Service Validator offline against one simulated BMC."""
    from lab.bmcsim.check import run_validator
    lab = _lab()
    result = run_validator(lab.fleet(), lab.paths.home, node)
    console.print(f"Redfish Service Validator: pass {result['pass']}, warn {result['warn']}, "
                  f"fail {result['fail']} (report: {result['report']})")
    if result["fail"]:
        raise typer.Exit(1)


@check_app.command("kubectl")
def check_kubectl() -> None:
    """Drive the lab's Kubernetes API with the machine's real kubectl."""
    from lab.kubeapi.check import run_kubectl_check
    from lab.nodes.sshd import port_open
    lab = _lab()
    # the pod steps need a node whose sshd answers: the first installed one
    ssh_node = next(((n.address, n.ssh_port) for n in lab.fleet().nodes if port_open(n.address, n.ssh_port)), None)
    steps = run_kubectl_check(lab.paths.home, ssh_node=ssh_node)
    table = Table("step", "result")
    for step, ok, output in steps:
        table.add_row(step, "[green]ok[/]" if ok else f"[red]FAILED[/] {output[-200:]}")
    console.print(table)
    if not all(ok for _, ok, _ in steps):
        raise typer.Exit(1)


@app.command()
def inject(node: str = typer.Argument(..., help="A lab node that is installed (serving or not)."),
           kind: str = typer.Argument(..., help="Fault kind, e.g. xid, ecc_uncorrectable, flapping_port."),
           value: str = typer.Option(None, help="The fault's value (XID code, error count, ...)."),
           gpu: int = typer.Option(None, help="GPU index the fault is on."),
           iface: str = typer.Option(None, help="Interface the fault is on (cx0..cx7).")) -> None:
    """Give a running lab node a fault now, as hardware fails under a serving OS; the
    health watch's next look (or a re-burn-in) sees it."""
    from lab.errors import LabError
    from lab.inject import inject as inject_fault
    from lab.inject import parse_fault
    lab = _lab()
    spec = next((n for n in lab.fleet().nodes if n.name == node), None)
    if spec is None:
        raise LabError(f"no node {node} in the lab's fleet ({lab.fleet_path})",
                       hint="name a node of that fleet profile")
    fault = parse_fault(kind, load_skus()[spec.sku], value=value, gpu=gpu, iface=iface)
    now = inject_fault(lab.paths.home, spec, fault)
    console.print(f"{node}: {fault.kind} injected; its faults now: "
                  + ", ".join(str(f.kind) for f in now.faults))


@app.command()
def clear(node: str = typer.Argument(..., help="A lab node given faults by `bringup lab inject`."),
          kind: str = typer.Argument(None, help="The fault kind to clear (default: every injected fault).")) -> None:
    """Clear a fault `bringup lab inject` gave a node, as a repair would; the node's next
    tool run (a re-burn-in after `bringup node repaired`) no longer sees it."""
    from lab.errors import LabError
    from lab.inject import clear as clear_faults
    lab = _lab()
    spec = next((n for n in lab.fleet().nodes if n.name == node), None)
    if spec is None:
        raise LabError(f"no node {node} in the lab's fleet ({lab.fleet_path})",
                       hint="name a node of that fleet profile")
    gone, now = clear_faults(lab.paths.home, spec, kind)
    console.print(f"{node}: cleared {', '.join(str(f.kind) for f in gone)}; its injected faults now: "
                  + (", ".join(str(f.kind) for f in now.faults if f not in spec.faults) or "none"))
