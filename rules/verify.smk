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
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        sample=config["verify"]["sample"],
        all=config["verify"]["all"],
        seed=config["verify"]["seed"],
    script:
        "../scripts/verify.py"
