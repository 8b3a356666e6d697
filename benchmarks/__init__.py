"""The benchmarks: run from the checkout as ``python -m benchmarks.run`` (see run.py); they share
tests/support with the tests, imported as ``tests.support``."""
