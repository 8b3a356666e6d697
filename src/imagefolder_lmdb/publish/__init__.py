"""Publishing a converted dataset to object storage (``convert DATA s3://…``): ``upload`` (one
multipart upload per split, the replace rule checked before it and again before it completes, the
object read back), ``s3_multipart`` (S3's multipart calls, abortable in-process), ``revisions``
(a split of revisions: only the data files the bucket lacks, then the pointer by a conditional write)
and ``sync`` (the published pointer taken down before a change is computed). Above both
``remote`` (the stores, their errors) and ``verify`` (the read-back check)."""
