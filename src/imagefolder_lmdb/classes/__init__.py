"""Class lists: the one every split shares (lists.py, the shipped ones in data/) and which split uses
which (plan.py)."""
