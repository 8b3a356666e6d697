# SPDX-License-Identifier: MIT
"""What the controller (run/launch.py) hands the logger plugin (board/logger_plugin.py): the plugin's
name as ``--logger`` takes it, and the variables it sets in Snakemake's environment for the plugin to
read. Here, below both, so that the plugin imports nothing of the controller, and the controller
nothing of Snakemake's plugin interface (snakemake is an extra)."""

#: The logger plugin (``snakemake_logger_plugin_imagefolder_lmdb``) as ``--logger`` names it.
PLUGIN = "imagefolder-lmdb"
#: Set for the plugin: where its closing lines go (this process shows them, once).
ERROR_FILE_VARIABLE = "IMAGEFOLDER_LMDB_ERROR_FILE"
#: Set for the plugin: where the closing lines of an interrupted run go (this process names the
#: signal it got there first).
INTERRUPT_FILE_VARIABLE = "IMAGEFOLDER_LMDB_INTERRUPT_FILE"
#: Set for the plugin: this process's id. Snakemake runs in a process group of its own, which a kill
#: of this process (or of its group) does not reach: the plugin stops the run once its parent is gone.
PARENT_VARIABLE = "IMAGEFOLDER_LMDB_PARENT"
#: Set for the plugin: "1" where this process's stderr is a terminal (the plugin's is a pipe to it).
TERMINAL_VARIABLE = "IMAGEFOLDER_LMDB_TERMINAL"
