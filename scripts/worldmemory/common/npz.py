"""Byte-stable .npz files: equal arrays give equal bytes, so reruns compare by hash; and a check
that a user's .npz holds plain arrays, which every reader loads without pickle
(``np.load(..., allow_pickle=False)``: an archive with Python objects could run code when loaded)."""

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


def npz_problem(path, keys) -> str | None:
    """None if ``path`` is an .npz archive holding an array per name of ``keys``, none of them
    with Python objects in it (what np.load(path, allow_pickle=False) reads); otherwise what is
    wrong, in words. Reads the arrays' headers only, so it costs the same for any size."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            for key in keys:
                if f"{key}.npy" not in names:
                    held = ", ".join(repr(n.removesuffix(".npy")) for n in names) or "none"
                    return f"holds no array {key!r} (its arrays: {held})"
                with archive.open(f"{key}.npy") as f:
                    version = np.lib.format.read_magic(f)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                        np.lib.format.read_array_header_2_0
                    dtype = read(f)[2]
                if dtype.hasobject:
                    return f"holds {key!r} as Python objects ({dtype}), which only pickle can load"
    except (OSError, zipfile.BadZipFile, ValueError) as e:
        return f"is no .npz archive ({e})"
    return None
