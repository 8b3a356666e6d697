# SPDX-License-Identifier: MIT
"""Snakemake's logger plugin ``imagefolder-lmdb`` (``snakemake --logger imagefolder-lmdb``): a
progress board per split and a failure's actionable lines last. Snakemake finds logger plugins only
as top-level packages named ``snakemake_logger_plugin_<name>``; the code is
``imagefolder_lmdb.board.logger_plugin``."""

from imagefolder_lmdb.board.logger_plugin import LogHandler

__all__ = ["LogHandler"]
