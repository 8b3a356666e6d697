rule encode_shard:
    """Check and encode one contiguous slice of the manifest into a part LMDB (merge: false: and make it
    the shard's data file of the split)."""
    input:
        # the stamp stands for the shard's lines of the manifest: a newer manifest with the same lines
        # (the split listed again after a change elsewhere) leaves the shard alone
        manifest=ancient(PATHS.manifest()),
        stamp=shard_stamp,
        # merge: false: what the data file's meta records (none with a merge: its params stay as they were)
        counts=no_merge_only(PATHS.counts()),
        made_from=no_merge_only(made_from_file),
    output:
        # removed once merged, unless keep_parts: then a later change re-encodes only its own shards
        # and the merge takes the rest from here (merge: false: none, see encode_part)
        part=encode_part(),
        report=PATHS.part_report(),
        # merge: false (--no-merge, issue 60): the shard's data file of the split, made by this job from the
        # part it writes at PATHS.part() (steps/data_file.py: a hard link, the meta added, checked, renamed
        # into place); rules/write_pointer.smk writes the split as a pointer over them
        data_file=no_merge_only(temp(PATHS.data_file())),
    log:
        PATHS.log("encode_shard", shard=SHARD),
    benchmark:
        PATHS.benchmark("encode_shard", shard=SHARD)
    conda:
        "../envs/imagefolder-lmdb.yaml"
    threads: 1
    # memory and time per attempt (rules/cluster.smk); peak for ImageNet train: images streamed one
    # at a time: flat in the shard size (~0.4 GB; ~0.55 GB as an array task, see rules/cluster.smk);
    # merge: false adds the shard's rows of the manifest for its meta (~0.1 GB), after the images
    resources:
        mem_mb=per_attempt(1500),
        runtime=per_attempt(60),
    params:
        shards=step_param(encode_shard_params, "shards"),
        encode=step_param(encode_shard_params, "encode"),
    script:
        "../scripts/encode_shard.py"
