"""Record where each record lies in an imagefolder-lmdb file:

    python scripts/add_locations.py FILE.lmdb [FILE.lmdb ...]
    imagefolder-lmdb add-locations FILE.lmdb [...]   (the same, installed with pip)

The command is imagefolder_lmdb.commands.add_locations (src/imagefolder_lmdb/commands/add_locations.py); its
library, imagefolder_lmdb.writing.record_locations.
"""

import sys

from imagefolder_lmdb.commands.add_locations import main

if __name__ == "__main__":
    sys.exit(main())
