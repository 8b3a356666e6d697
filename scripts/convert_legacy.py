"""Rewrite a legacy folder2lmdb LMDB as imagefolder-lmdb v1:

    python scripts/convert_legacy.py IN.lmdb OUT.lmdb [--classes classes.txt] [--quality 95]
                                     [--reencode auto|always] [--on-error fail|skip]
    imagefolder-lmdb convert-legacy IN.lmdb OUT.lmdb [...]   (the same, installed with pip)

The work is imagefolder_lmdb.commands.convert_legacy (src/imagefolder_lmdb/commands/convert_legacy.py).
"""

import sys

from imagefolder_lmdb.commands.convert_legacy import main

if __name__ == "__main__":
    sys.exit(main())
