"""``bringup parse nccl|dcgm|gpu-burn|ibstat FILE [--sku SKU] [--json]``: judge a recorded
tool output the way the burn-in agent would (logic in :mod:`bringup.acceptance.replay`).

Exit 0 when the output was understood, whatever it shows (``ok`` says whether it shows a
healthy run); exit 2 with a one-line error when it holds no result, or the file or SKU
cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console

from bringup.acceptance.replay import Replay, replay
from bringup.errors import BringupError, ConfigError
from bringup.sku import SkuSpec, load_skus

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Judge a recorded tool output (what the burn-in agent would conclude).")
err = Console(stderr=True, soft_wrap=True)

FileArg = typer.Argument(..., help="the tool's recorded stdout ('-' reads stdin)")
SkuOpt = typer.Option(None, "--sku", help="judge against this SKU's expectations (e.g. hgx-h100-80gb)")
JsonOpt = typer.Option(False, "--json", help="print the JSON object only")


def _sku(name: str | None) -> SkuSpec | None:
    if name is None:
        return None
    skus = load_skus()
    if name not in skus:
        raise ConfigError(f"unknown SKU {name!r}; known: {', '.join(sorted(skus))}")
    return skus[name]


def _show(r: Replay, as_json: bool) -> None:
    doc = r.model_dump(mode="json")
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return
    out = Console(soft_wrap=True)
    out.print(f"{r.tool}: {'[green]ok[/]' if r.ok else '[red]not ok[/]'}", highlight=False)
    for f in r.findings:
        color = {"fail": "red", "error": "yellow", "info": "dim"}[f.severity]
        out.print(f"  [{color}]{f.severity:5}[/] {f.check}: {f.message}", highlight=False)
    out.print("  figures: " + json.dumps(doc["figures"]), highlight=False)


def _run(tool: str, file: str, sku: str | None, as_json: bool) -> None:
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(errors="replace")
        result = replay(tool, text, _sku(sku), source=file)
    except OSError as exc:
        err.print(f"error: cannot read {file}: {exc.strerror or exc}", highlight=False)
        raise typer.Exit(2) from None
    except BringupError as exc:
        err.print(f"error: {exc}".replace("\n", " "), highlight=False)
        raise typer.Exit(2) from None
    _show(result, as_json)


@app.command("nccl")
def nccl_cmd(file: str = FileArg, sku: str | None = SkuOpt, as_json: bool = JsonOpt) -> None:
    """nccl-tests *_perf output (any layout, launcher prefixes included)."""
    _run("nccl", file, sku, as_json)


@app.command("dcgm")
def dcgm_cmd(file: str = FileArg, sku: str | None = SkuOpt, as_json: bool = JsonOpt) -> None:
    """dcgmi diag -j output (DCGM 3.x or 4.x)."""
    _run("dcgm", file, sku, as_json)


@app.command("gpu-burn")
def gpu_burn_cmd(file: str = FileArg, sku: str | None = SkuOpt, as_json: bool = JsonOpt) -> None:
    """gpu_burn output."""
    _run("gpu-burn", file, sku, as_json)


@app.command("ibstat")
def ibstat_cmd(file: str = FileArg, sku: str | None = SkuOpt, as_json: bool = JsonOpt) -> None:
    """ibstat output."""
    _run("ibstat", file, sku, as_json)
