"""Shared pieces of the agent tests: configs written to TOML and a clock the test advances."""

from __future__ import annotations

from pathlib import Path

from reclaim.agent.config import AgentSettings, load_settings

COMPONENTS = [
    # name, app, role, cpu cores, mem GiB
    ("web-0", "web", "core", 1.0, 1.0),
    ("batch-0", "batch", "core", 1.0, 1.0),
    ("batch-1", "batch", "elastic", 1.0, 1.0),
]


def write_config(
    path: Path, parent: str, components=COMPONENTS, cgroup_root: Path | None = None, **agent
) -> AgentSettings:
    """Write an agent TOML config at ``path`` and load it back (the loader is under test too)."""
    lines = ["[agent]", f'parent = "{parent}"']
    if cgroup_root is not None:
        lines.append(f'cgroup_root = "{cgroup_root}"')
    for key, value in agent.items():
        lines.append(f"{key} = {_toml(value)}")
    for name, app, role, cpu, mem in components:
        lines += [
            "[[component]]",
            f'name = "{name}"',
            f'app = "{app}"',
            f'role = "{role}"',
            f"cpu = {cpu}",
            f"mem_gib = {mem}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return load_settings(path)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value)
