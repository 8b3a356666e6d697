rule verify:
    """Open the result with the reader, check it, decode a sample, draw a contact sheet."""
    input:
        f"{RESULTS}/{{split}}.lmdb",
    output:
        report=f"{RESULTS}/{{split}}.verify.json",
        contact=f"{RESULTS}/{{split}}.contact.png",
    params:
        sample=config["verify"]["sample"],
        all=config["verify"]["all"],
        seed=config["verify"]["seed"],
    log:
        f"{LOGS}/verify/{{split}}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    script:
        "../scripts/verify.py"
