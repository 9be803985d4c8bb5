"""The HTML report of ``traveller benchmark --html``: one self-contained file (inline SVG
plots drawn by matplotlib, no script, no link to fetch) that opens offline.

It shows the aggregate per policy (the IQM, or the mean, with its bootstrap 95% interval), the
performance profile (the fraction of cells whose win rate exceeds each threshold, with its
band), every cell's win rate with its Wilson 95% interval (one panel per policy), the
probability of improvement when the run had ``--against``, and the leaderboard's table.
"""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

__all__ = ["render_report", "write_report"]


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _short(name: str) -> str:
    return Path(name).stem if name.endswith((".onnx", ".pt")) else name


def _ranked(records: dict[str, Any]) -> list[str]:
    def key(name: str) -> tuple[int, float]:
        agg = records[name]["aggregate"]
        return (-agg["cells_used"], -(agg["score"] if agg["score"] is not None else -1))
    return sorted(records, key=key)


def _aggregate_plot(records: dict[str, Any], names: list[str]) -> str:
    import matplotlib.pyplot as plt

    played = [n for n in names if records[n]["aggregate"]["score"] is not None]
    fig, ax = plt.subplots(figsize=(6.5, 0.35 * len(played) + 1.2))
    for y, n in enumerate(played):
        agg = records[n]["aggregate"]
        lo, hi = agg["ci95"]
        ax.barh(y, agg["score"], color="#4c72b0", alpha=0.8)
        ax.errorbar(agg["score"], y, xerr=[[agg["score"] - lo], [hi - agg["score"]]],
                    color="black", capsize=3, lw=1)
    ax.set_yticks(range(len(played)), [_short(n) for n in played])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    metric = records[played[0]]["aggregate"]["metric"] if played else "aggregate"
    ax.set_xlabel(f"{metric} (bootstrap 95% interval)")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _profile_plot(records: dict[str, Any], names: list[str]) -> str | None:
    import matplotlib.pyplot as plt

    with_profile = [n for n in names if records[n]["aggregate"].get("profile")]
    if not with_profile:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    cmap = plt.get_cmap("tab20")
    for k, n in enumerate(with_profile):
        prof = records[n]["aggregate"]["profile"]
        color = cmap(k % 20)
        ax.plot(prof["tau"], prof["fraction"], label=_short(n), color=color, lw=1.5)
        ax.fill_between(prof["tau"], prof["ci95"][0], prof["ci95"][1], color=color, alpha=0.15)
    ax.set_xlabel("win rate threshold tau")
    ax.set_ylabel("fraction of cells with win rate > tau")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    return _svg(fig)


def _cells_plot(records: dict[str, Any], names: list[str]) -> str:
    import matplotlib.pyplot as plt

    cells = records[names[0]]["cells"]
    labels = [f"{c['set']} vs {_short(c['opponent'])}" for c in cells]
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 0.2 * len(cells) * rows + rows),
                             sharey=True, squeeze=False)
    for k, n in enumerate(names):
        ax = axes[k // cols][k % cols]
        for y, c in enumerate(records[n]["cells"]):
            if not c["battles"]:
                ax.text(0.02, y, "n/p", va="center", fontsize=7, color="grey")
                continue
            lo, hi = c["win_ci95"]
            ax.barh(y, c["win_rate"], color="#55a868", alpha=0.8)
            ax.errorbar(c["win_rate"], y, xerr=[[c["win_rate"] - lo], [hi - c["win_rate"]]],
                        color="black", capsize=2, lw=0.8)
        ax.set_title(_short(n), fontsize=9)
        ax.set_xlim(0, 1)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].invert_yaxis()
    fig.supxlabel("win rate (Wilson 95% interval)")
    fig.tight_layout()
    return _svg(fig)


def _table(markdown: str) -> str:
    """A Markdown pipe table as an HTML table."""
    rows = [line.strip().strip("|").split("|") for line in markdown.splitlines()
            if line.startswith("|") and not line.startswith("|---")]
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c.strip())}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>"
                   for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_report(suite: Any, payload: dict[str, Any], board: str) -> str:
    """The report's HTML text for a match record ``payload`` (``traveller benchmark --out``'s
    JSON) of ``suite``, with ``board`` its Markdown leaderboard
    (``traveller_rl.benchmark.format_leaderboard``)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "traveller"  # the same record, the same bytes
    records = payload["policies"]
    names = _ranked(records)
    tables = "".join(_table(part) for part in board.split("\n\n"))
    parts = [f"<h1>Benchmark {html.escape(suite.name)}</h1>",
             f"<p>{html.escape(suite.description)}</p>",
             f"<p><code>{html.escape(payload['command'])}</code> &middot; suite file "
             f"{html.escape(payload['suite']['file'])} (SHA-256 "
             f"{payload['suite']['sha256'][:12]}) &middot; {payload['seconds']} s</p>",
             "<h2>Aggregate</h2>", _aggregate_plot(records, names)]
    profile = _profile_plot(records, names)
    if profile is not None:
        parts += ["<h2>Performance profile</h2>", profile]
    poi = payload.get("probability_of_improvement")
    if poi:
        parts.append(f"<h2>Probability of improvement over {html.escape(poi['over'])}</h2><ul>")
        for name, p in poi["of"].items():
            text = ("no cell both played" if p["score"] is None else
                    f"{p['score']:.3f} [{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}] over "
                    f"{p['cells_used']} cells")
            parts.append(f"<li>{html.escape(_short(name))}: {text}</li>")
        parts.append("</ul>")
    parts += ["<h2>Cells</h2>", _cells_plot(records, names), "<h2>Table</h2>", tables]
    style = ("body{font-family:sans-serif;max-width:1300px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Benchmark "
            f"{html.escape(suite.name)}</title><style>{style}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def write_report(path: Path, suite: Any, payload: dict[str, Any], board: str) -> None:
    """Write ``render_report`` to ``path`` (folders made as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(suite, payload, board), encoding="utf-8")
