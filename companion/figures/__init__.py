"""Matplotlib figures for the chapters, one module per topic. Each function returns a Figure."""
