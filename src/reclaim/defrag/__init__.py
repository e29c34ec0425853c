"""Defragmentation: drain a few hosts by live migration when empty hosts run short (LARS)."""

from reclaim.defrag.lars import (
    Defragmenter,
    choose_drain_hosts,
    migration_order,
    replay_migrations,
)

__all__ = ["Defragmenter", "choose_drain_hosts", "migration_order", "replay_migrations"]
