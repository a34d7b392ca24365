"""Dagster definitions for offsets_platform: thin assets over the library.

Installed as `offsets_platform_dagster` (setup.py maps this folder to that name), so that it cannot
collide with another project's top-level `assets` package in the same environment.
"""
