"""One module per rule of the workflow: each rule's script, scripts/<rule>.py, calls its ``run_in_rule``
(board/rule_runner.py's ``run_rule`` bound to the module's ``main``), whose settings are one typed object
of config/step_settings.py."""
