"""The checks of a finished dataset, below the modules that run them: ``checks`` (a file's pages, meta,
locations and records; steps/verify.py runs them on a file, remote/verify.py on a streamed copy of a
URL) and ``datasets`` (the datasets a path names, for ``verify`` and ``info``)."""
