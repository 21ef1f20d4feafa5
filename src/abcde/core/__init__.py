"""The core: validated inputs, the diff (fragment table) and the paper's formulas, each once."""
