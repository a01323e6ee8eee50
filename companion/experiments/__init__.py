"""What the experiments measured, read back by one reader per chapter; ``runs/`` writes them."""
