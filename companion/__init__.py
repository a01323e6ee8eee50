"""Companion package of the book *Where is this patch? Position in Vision Transformers*.

Every piece of code the book shows lives here, once, with a unit test.
"""

__version__ = "0.1.0"
