# SPDX-License-Identifier: MIT
"""The helper process of a process that must not run obstore itself (see client): reads ranged
requests from stdin, answers on stdout, ends when stdin closes."""

from __future__ import annotations

import sys

from .client import serve
from .leaving import leave

if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
    leave(0)  # never through the interpreter's teardown with obstore's runtime running
