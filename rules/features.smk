# Shared perception backends: DINOv2, fetched once for every study that scores with it.


rule prefetch_dinov2:
    output:
        directory(DINOV2_DIR),
    params:
        id=config["dinov2"],
    log:
        "results/logs/prefetch_dinov2.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.models.prefetch --id {params.id} --out {output} 2>&1 | tee {log}"
