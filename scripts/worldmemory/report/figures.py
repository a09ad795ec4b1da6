"""Figure files every study shares: PNG and PDF without dated or versioned metadata."""

from __future__ import annotations

from pathlib import Path


def save_figure(fig, out_png, out_pdf) -> None:
    """Write a figure as PNG and PDF without dated or versioned metadata (same bytes on rerun)."""
    for path in (out_png, out_pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=150, metadata={"Software": None})
    fig.savefig(out_pdf, metadata={"CreationDate": None})
