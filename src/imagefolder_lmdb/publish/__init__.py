"""Publishing a converted dataset to object storage (``convert DATA s3://…``): ``upload`` (one
multipart upload per split, the replace rule checked before it and again before it completes, the
object read back) and ``s3_multipart`` (S3's multipart calls, abortable in-process). Above both
``remote`` (the stores, their errors) and ``verify`` (the read-back check)."""
