"""Snakemake's own words that the logger plugin (board/logger_plugin.py) matches, in one place, with the
release they were read from. Snakemake has no structured event for these, so its English is the
interface; tests/workflow/test_snakemake_words.py runs the pinned Snakemake to produce each one (an
interruption, a failed job, a finished job, "Nothing to be done") and checks it is still recognised.
"""

from __future__ import annotations

import re

#: The Snakemake release these words were read from: requirements.txt's pin (the test checks they agree).
READ_FROM = "9.27.1"

#: How Snakemake's message begins when every output is up to date (it then runs no onsuccess).
NOTHING_TO_BE_DONE = "Nothing to be done"
#: How the line naming Snakemake's own log of the run begins.
COMPLETE_LOGS = "Complete log(s): "
#: A finished job's line names its rule so: ``Finished jobid: 1 (Rule: merge)``.
FINISHED_RULE = re.compile(r"\(Rule: (\w+)\)")
#: Snakemake's errors that only repeat a failed job's (whose own message is shown).
REPEATS = ("RuleException", "At least one job did not complete", "Exiting because a job execution failed")
#: Snakemake's words when it stops on request: on SIGINT (its jobs got it too, or it stops them), and
#: on SIGTERM (it lets the running jobs end, starting no other); the signal's name for each.
STOPPING = {
    "Terminating processes on user request": "SIGINT",
    "Cancelling snakemake on user request": "SIGINT",
    "Will exit after finishing currently running jobs": "SIGTERM",
}
#: A line of Snakemake's error that names its internals: a file and a line of its own or of a temp script.
INTERNAL_LINE = re.compile(r'(?:\w+Error|\w+Exception) in file ".*", line \d+:?$|^\s*File ".*", line \d+')


def stop_signal(message: str) -> str | None:
    """The signal Snakemake says it stops on (``"SIGINT"``, ``"SIGTERM"``), None if it says no such thing."""
    return next((name for words, name in STOPPING.items() if words in message), None)


def finished_rule(message: str) -> str | None:
    """The rule a "Finished jobid" line names, None for another line."""
    match = FINISHED_RULE.search(message)
    return match.group(1) if match else None
