"""Fetch a released checkpoint once into resources/models/<name>/ (the only step that needs network).

Every later job loads the local copy, so compute nodes without internet access run the models.
"""

import argparse


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--id", required=True, help="Hugging Face model id, e.g. facebook/vjepa2-vitl-fpc64-256")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from huggingface_hub import snapshot_download

    path = snapshot_download(repo_id=args.id, local_dir=args.out, allow_patterns=["*.json", "*.safetensors"])
    print(f"[prefetch] {args.id} -> {path}")


if __name__ == "__main__":
    main()
