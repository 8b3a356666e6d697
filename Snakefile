# ImageFolder / ILSVRC2012 -> one LMDB file per split.
#
#   snakemake --cores 16 --configfile config/imagenet.yaml
#
# The config has no default file on purpose: Snakemake merges --configfile into a default one, so
# the default's splits would leak into every run. Defaults live in config/schema.yaml.


include: "rules/common.smk"
include: "rules/resume.smk"
include: "rules/cluster.smk"
include: "rules/extract.smk"
include: "rules/count_check.smk"
include: "rules/encode_shard.smk"
include: "rules/merge.smk"
include: "rules/write_meta.smk"
include: "rules/write_pointer.smk"
include: "rules/verify.smk"
include: "rules/report_split.smk"


report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        final_outputs(),


onsuccess:
    remove_leftovers(config)
    print_summary(config)
    cancel_scheduler_timers()  # exit now, not a second later (src/imagefolder_lmdb/run/scheduler_timers.py)
