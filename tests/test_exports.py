"""Every package's __all__ names what it exports, and all of it exists."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "omem_protocol",
    "omem_client",
    "openmemoryd",
    "openmemoryd.api",
    "openmemoryd.config",
    "openmemoryd.doctor",
    "openmemoryd.engine",
    "openmemoryd.index",
    "openmemoryd.memory",
    "openmemoryd.search",
    "openmemoryd.server",
    "openmemoryd.store",
    "openmemoryd.text",
    "openmemoryd.workspace",
    "openmemoryd.chat",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_complete_and_resolvable(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported))
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr}"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, type(importlib))
        and getattr(value, "__module__", "").startswith(name.split(".")[0])
        and attr not in {"annotations"}
    }
    assert public <= set(exported), f"{name} exports {public - set(exported)} without __all__"
