rule verify:
    """Open the result with the reader, check it, decode a sample, draw a contact sheet."""
    input:
        f"{RESULTS}/{{split}}.lmdb",
    output:
        report=report(
            f"{RESULTS}/{{split}}.verify.json",
            caption="../report/verify.rst",
            category="{split}",
            labels={"figure": "verify report"},
        ),
        contact=report(
            f"{RESULTS}/{{split}}.contact.png",
            caption="../report/contact.rst",
            category="{split}",
            labels={"figure": "contact sheet"},
        ),
    log:
        f"{LOGS}/verify/{{split}}.log",
    benchmark:
        f"{WORK}/benchmarks/verify/{{split}}.tsv"
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
