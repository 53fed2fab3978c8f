"""Lunora Jobs."""
