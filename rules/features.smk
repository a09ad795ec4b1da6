# Shared perception backends: DINOv2, fetched once for every study that scores with it.


# Fetching needs the network, which a login node has and compute nodes often lack: on a cluster
# (profiles/slurm) the prefetch rules run where Snakemake runs, never as SLURM jobs.
localrules:
    prefetch_dinov2,
    prefetch_perception,


rule prefetch_dinov2:
    output:
        directory(DINOV2_DIR),
    log:
        "results/logs/prefetch_dinov2.log",
    benchmark:
        benchmark_tsv("prefetch_dinov2")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        id=config["dinov2"],
    shell:
        "python -m worldmemory.models.prefetch --id {params.id:q} --target {output:q} --out {output:q}"
        " 2>&1 | tee {log:q}"


# The weights of every configured estimator named by a Hugging Face id (worldmemory/perception/estimators.py):
# fetched once into resources/models/perception/<id>@<revision>; perception jobs read them offline.
PERCEPTION_WEIGHTS = prefetched_weights({s: config[s] for s in ("worldmembench", "persistbench") if s in config})


rule prefetch_perception:
    output:
        directory("resources/models/perception/{slug}"),
    log:
        "results/logs/prefetch_perception_{slug}.log",
    benchmark:
        benchmark_tsv("prefetch_perception_{slug}")
    wildcard_constraints:
        slug="|".join(re.escape(s) for s in PERCEPTION_WEIGHTS) or "^$",
    priority: 100
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        id=lambda wc: PERCEPTION_WEIGHTS[wc.slug][0],
        revision=lambda wc: PERCEPTION_WEIGHTS[wc.slug][1],
    shell:
        "python -m worldmemory.models.prefetch --id {params.id:q} --revision {params.revision:q}"
        " --target {output:q} --out {output:q} 2>&1 | tee {log:q}"
