"""Solutions to the chapters' exercises, one module per chapter (``ch01``, ``ch02``, ...).

The book shows them hidden; the tests in ``tests/`` check every one.
"""
