"""Cleanup of consumer-group state: what could be removed, and (later) plans, approval, apply."""

from offsets_platform.views.candidates import CleanupCandidates, cleanup_candidates

__all__ = ["CleanupCandidates", "cleanup_candidates"]
