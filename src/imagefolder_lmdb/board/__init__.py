"""What a running workflow shows, below the controller (run/) that starts it: the progress board
(progress.py), Snakemake's logger plugin (logger_plugin.py; what the controller hands it:
plugin_environment.py; Snakemake's words it matches: snakemake_words.py), a rule's log and error
(rule_runner.py), the end-of-run summary (summary.py; the labels' origin in words: label_origin.py),
and the rules in one table they read (rule_table.py)."""
