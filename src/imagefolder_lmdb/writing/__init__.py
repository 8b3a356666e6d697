"""Writing outputs: files whole or not at all (atomic.py), disk-full errors, the LMDB writer, the stored image
bytes (reencode.py), the meta (meta_document.py: one builder) and the crash tests' hook (hold_points.py)."""
