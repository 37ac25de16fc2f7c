"""Command-line clients of gangweb that need no Django: the kubectl plugin."""
