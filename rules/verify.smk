rule verify:
    """Open the result with the reader, check it, decode a sample, draw a contact sheet."""
    input:
        PATHS.dataset(),
    output:
        report=report(
            PATHS.verify_report(),
            caption="../report/verify.rst",
            category="{split}",
            labels={"figure": "verify report"},
        ),
        contact=report(
            PATHS.contact_sheet(),
            caption="../report/contact.rst",
            category="{split}",
            labels={"figure": "contact sheet"},
        ),
    log:
        PATHS.log("verify"),
    benchmark:
        PATHS.benchmark("verify")
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: the meta (labels,
    # paths) and one decoded image at a time (~0.8 GB)
    resources:
        mem_mb=per_attempt(2000),
        runtime=per_attempt(60),  # verify.all decodes every image: ~20 min for ImageNet train
    params:
        sample=step_param(verify_params, "sample"),
        all=step_param(verify_params, "all"),
        seed=step_param(verify_params, "seed"),
    script:
        "../scripts/verify.py"
