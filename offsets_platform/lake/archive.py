"""Starting a lake over: every table moves aside into an archive folder, nothing is deleted.

A lake holds one log's history. When that log is gone (the cluster was rebuilt, the topic created
again, the log restored from an older copy), its records, the models built on them, its snapshots
and its cleanup records describe a cluster that no longer exists, and mixing them with the new
log's would give wrong answers. Archiving moves each layer's folder (`<root>/<layer>`) into
`<root>/_archive/<UTC time>/<layer>` with one rename each, so the archive is a lake of its own:
`Lake(<archive folder>)` reads every old table, the cleanup audit included. The leases folder
stays where it is, so that processes waiting for a lease keep excluding each other.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from offsets_platform.lake.lease import LEASES_FOLDER
from offsets_platform.lake.storage import is_object_store

ARCHIVE_FOLDER = "_archive"
REASON_FILE = "ARCHIVED.txt"


def archive_tables(root: str | Path, reason: str, now: datetime | None = None) -> Path | None:
    """Move every layer folder of the lake under `root` into a new archive folder.

    Returns:
        The archive folder, or None when the lake had no table to move.
    """
    if is_object_store(root):
        raise ValueError(f"archiving renames folders, which object storage lacks: {root} is not a local lake")
    root = Path(root)
    layers = sorted(entry for entry in root.iterdir()
                    if entry.is_dir() and entry.name not in (ARCHIVE_FOLDER, LEASES_FOLDER)) if root.exists() else []
    if not layers:
        return None
    now = now or datetime.now(timezone.utc)
    archive = root / ARCHIVE_FOLDER / f"{now:%Y%m%dT%H%M%SZ}"
    archive.mkdir(parents=True)  # an archive of the same second already there is an error, not a merge
    (archive / REASON_FILE).write_text(f"archived at {now:%Y-%m-%d %H:%M:%S} UTC: {reason}\n")
    for layer in layers:
        os.rename(layer, archive / layer.name)  # atomic per layer on one file system
    return archive
