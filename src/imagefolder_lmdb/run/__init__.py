"""What a run is made of around its steps: where each file lies, a rule's log and errors, the crash tests' hold points
and the end-of-run summary."""
