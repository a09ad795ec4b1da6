"""Fetch a released checkpoint once into resources/models/<name>/ (the only step that needs network).

Every later job loads the local copy, so compute nodes without internet access run the models.
A node without network (or with HF_HUB_OFFLINE=1) cannot fetch: the job then stops with one
message naming the model, the revision, the cause and the two ways out (fetch on a machine with
network, or point the config at a local directory), instead of huggingface_hub's traceback.

Only files matching ``--patterns`` are fetched. The default (``*.json *.jinja *.safetensors``)
covers the transformers checkpoints; a repository laid out otherwise names its own files.

The prefetch listing for the two repositories of Cosmos-Predict1 (Section 4.5 and Appendix F of
*Tracking Is Not Permanence*), as NVIDIA's cosmos-predict1 ``scripts/download_autoregressive_checkpoints.py``
lists and checksums them (both repositories are gated: accept the license on the model page and
log in with ``hf auth login`` or set HF_TOKEN):

- ``nvidia/Cosmos-Predict1-4B``: ``model.pt`` (the transformer's state dict, md5
  5fdc62fc87fbf470dbcc2288589b7942) and ``guardrail/video_content_safety_filter/safety_filter.pt``
  (a generation-time safety filter the readout does not use). Fetch with ``--patterns model.pt``.
- ``nvidia/Cosmos-Tokenize1-DV8x16x16-720p``: the TorchScript programs ``encoder.jit`` (md5
  95186b0410346a3f0cf250b76daec452), ``decoder.jit`` and ``autoencoder.jit``. Fetch with
  ``--patterns '*.jit'`` (the readout loads ``encoder.jit`` only).
"""

from __future__ import annotations

import argparse
import sys

# configs, processors and tokenizers are JSON, but a chat template may be saved beside them as
# chat_template.jinja (transformers 5's default), which a VLM judge's processor reads
DEFAULT_PATTERNS = ("*.json", "*.jinja", "*.safetensors")


def failure_message(model_id: str, revision: str, error: Exception, target: str | None) -> str:
    """Why ``model_id`` at ``revision`` could not be fetched (one line) and how to get past it."""
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    cause = f"{type(error).__name__}: {' '.join(str(error).split())}"
    if len(cause) > 400:
        cause = cause[:397] + "..."
    if constants.HF_HUB_OFFLINE:
        cause += " (HF_HUB_OFFLINE is set: huggingface_hub makes no network calls)"
    run = f"`./run.sh snakemake {target}`" if target else "the prefetch target"
    fixes = [f"run {run} (with the same --configfile) on a machine with network, e.g. the "
             "login node, then rerun here: later jobs only read the local copy",
             "or download the model yourself and point the config at its directory: "
             "`source: local` with `path: DIR` for a permanence model, `dinov2: DIR` for DINOv2"]
    if isinstance(error, (RepositoryNotFoundError, RevisionNotFoundError)):
        fixes.insert(0, f"check the id and revision at https://huggingface.co/{model_id} "
                        "(a gated or private model needs `hf auth login` or HF_TOKEN)")
    lines = [f"[prefetch] cannot fetch {model_id} at revision {revision} from the Hugging Face Hub",
             f"  cause: {cause}", *(f"  fix: {f}" for f in fixes)]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--id", required=True, help="Hugging Face model id, e.g. facebook/vjepa2-vitl-fpc64-256")
    ap.add_argument("--revision", default="main", help="branch, tag or commit of the model repository")
    ap.add_argument("--target", default=None,
                    help="the Snakemake target that runs this fetch (printed in the error message)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--patterns", nargs="+", default=list(DEFAULT_PATTERNS), metavar="GLOB",
                    help="file patterns to fetch (default: %(default)s), e.g. model.pt or '*.jit'")
    args = ap.parse_args(argv)
    from huggingface_hub import snapshot_download

    try:
        path = snapshot_download(repo_id=args.id, revision=args.revision, local_dir=args.out,
                                 allow_patterns=args.patterns)
    except Exception as e:  # offline, no such repo or revision, connection, disk: one message
        sys.exit(failure_message(args.id, args.revision, e, args.target))
    print(f"[prefetch] {args.id}@{args.revision} -> {path}")


if __name__ == "__main__":
    main()
