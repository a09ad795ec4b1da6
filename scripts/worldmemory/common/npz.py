"""Byte-stable .npz files: equal arrays give equal bytes, so reruns compare by hash."""

from __future__ import annotations

import zipfile

import numpy as np


def save_npz(path, arrays: dict) -> None:
    """np.savez_compressed with fixed zip entry dates, so equal arrays give equal bytes (numpy
    stamps each entry with the current time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            entry = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(entry, "w") as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)
