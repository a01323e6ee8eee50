"""Where the book lives. Written by `make colab-sync` from _config.yml; do not edit."""

OWNER = "where-is-this-patch"
NAME = "vit-position-book"
REF = "main"
