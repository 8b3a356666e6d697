# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the imagefolder-lmdb authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""The reader, where the workflow and users inside a checkout import it: ``from dataset import LMDBDataset``.

No code of its own: the reader is the package ``imagefolder_lmdb.reader`` (src/imagefolder_lmdb/reader/),
installed with the repository (``pip install .``; its base dependencies are lmdb, numpy, Pillow and
torch), and this module re-exports its public names. Outside a checkout: ``from imagefolder_lmdb
import LMDBDataset``. Importing it imports no torch; ``LMDBDataset`` does, on first access.
"""

from imagefolder_lmdb.reader import *  # noqa: F403
from imagefolder_lmdb.reader import __all__, __getattr__  # noqa: F401  # LMDBDataset on first access
