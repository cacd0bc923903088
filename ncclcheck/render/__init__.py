"""Renderers: text reports and JSON for every command."""
