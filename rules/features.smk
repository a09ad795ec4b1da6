# Shared perception backends: DINOv2, fetched once for every study that scores with it.


# Fetching needs the network, which a login node has and compute nodes often lack: on a cluster
# (profiles/slurm) the prefetch rules run where Snakemake runs, never as SLURM jobs.
localrules:
    prefetch_dinov2,


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
