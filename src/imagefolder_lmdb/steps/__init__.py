"""One module per rule of the workflow: each rule's script, scripts/<rule>.py, calls its ``run_in_rule``."""
