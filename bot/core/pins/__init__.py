"""Pins in a downstream repository: where they are written, how they are found, and planning their bump."""
