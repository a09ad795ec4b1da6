"""Files a user's folder names stay inside that folder.

A WorldMemBench case (case.json: its conditioning frame and masks) and a PersistBench 360-degree
video (video.json, labels.npz, the panorama) are folders a user hands the workflow. What they
name is read and copied into requests handed to models, so a name must not reach past its
folder: no absolute path, no '..', no symlink (of the file or of a folder on the way) leading
out. A symlink that stays inside the folder is fine. Both studies check every such file with
``confinement_problem`` when they list their cases or videos, before any job.
"""

from __future__ import annotations

from pathlib import Path, PurePath


def outside(root, rel: str) -> str | None:
    """None if ``rel``, read relative to the folder ``root``, names a path inside ``root``
    (symlinks resolved); otherwise why not, in words."""
    parts = PurePath(rel).parts
    if PurePath(rel).is_absolute():
        return "an absolute path"
    if ".." in parts:
        return "a path through '..'"
    base = Path(root).resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        return f"a symlink leading out of the folder (it resolves to {target})"
    return None


def confinement_problem(root, key: str, rel: str, example: str) -> str | None:
    """None if ``rel`` (the value of ``key``) stays inside the folder ``root`` (``outside``);
    otherwise the problem naming the key, the value, what was expected and the fix, whose
    ``example`` is a file name that would do (e.g. conditioning.png)."""
    why = outside(root, rel)
    if why is None:
        return None
    return (f"{key} = {rel!r}: {why}; expected a path relative to the folder {Path(root)}, inside it (no absolute "
            f"path, no '..', no symlink leading out). Fix: copy the file into that folder (in place of "
            f"any symlink) and name it by its path there (e.g. {example!r})")
