"""Writing outputs: files whole or not at all (atomic.py), disk-full errors, the LMDB writer, the stored image
bytes (reencode.py) and the meta document."""
