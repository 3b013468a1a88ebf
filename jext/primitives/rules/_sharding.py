"""``def_sharding``: how the partitioner may split the primitive across devices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jext.primitives._sharding import parse_rule
from jext.primitives.rules._kind import Declaring, RuleKind

__all__ = ["KINDS"]


def declare(d: Declaring, rule: str, *, need_replication: Sequence[str] = ()) -> dict[str, Any]:
    return {"sharding": parse_rule(d.name, rule, need_replication)}


KINDS = (
    RuleKind(
        name="sharding",
        declaration="def_sharding",
        fields=("sharding",),
        declare=declare,
        composes="abstract evaluation gives results the rule's shardings; opaque lowerings "
        "are wrapped in custom_partitioning with it (primitives/_sharding.py)",
        checks=("sharding",),
        source=lambda rules: rules.sharding_source,
        derived=frozenset({"elementwise", "batch"}),
    ),
)
