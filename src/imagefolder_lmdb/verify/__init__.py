"""Checking a finished dataset, its one home: ``checks`` (a file's pages, meta, record locations and
records), ``command`` (``imagefolder-lmdb verify``; rule verify runs its ``verify`` on the file it
made), ``remote`` (a URL), ``contact_sheet``, and ``datasets`` (the datasets a path names, for
``verify`` and ``info``)."""
