"""Record where each record lies in an imagefolder-lmdb file:

    python scripts/add_locations.py FILE.lmdb [FILE.lmdb ...]
    imagefolder-lmdb add-locations FILE.lmdb [...]   (the same, installed with pip)

The work is imagefolder_lmdb.add_locations (src/imagefolder_lmdb/add_locations.py).
"""

import sys

from imagefolder_lmdb.add_locations import main

if __name__ == "__main__":
    sys.exit(main())
