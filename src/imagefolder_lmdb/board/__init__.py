"""What a running workflow shows: the progress board, the logger plugin, a rule's log and error, the
end-of-run summary, and the rules' table they read; below the controller (run/), which starts it."""
