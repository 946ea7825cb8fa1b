"""The declared side outputs of a job (``side_output_schemas``) and the output column names:
checked on the driver before any Spark job runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.types import StructType

from windowing.records import OutputTag
from windowing.spark.columns.schema import parse_output_schema

__all__ = ["MAX_SIDE_OUTPUTS", "check_names", "no_side_output", "parse_side_output_schemas"]

#: At most this many side outputs with a schema (``__pw_kind`` is a tinyint).
MAX_SIDE_OUTPUTS = 100


def check_names(names: list[str], what: str) -> None:
    """Raise ``ValueError`` when an output column name appears twice."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            msg = (
                f"{what}: column {n!r} appears twice; rename the input column or the "
                "output schema field"
            )
            raise ValueError(msg)
        seen.add(n)


def parse_side_output_schemas(
    value: Any, *, late_output_tag: OutputTag | None, keys: Sequence[str]
) -> tuple[tuple[OutputTag, StructType], ...]:
    """Validate ``side_output_schemas`` (a mapping of :class:`OutputTag` to a schema, as
    ``output_schema``) and return ``(tag, schema)`` pairs in the mapping's order."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        msg = (
            "side_output_schemas must be a mapping of OutputTag to a schema, e.g. "
            f"{{OutputTag('alerts'): 'level string'}}, got {type(value).__name__} {value!r}"
        )
        raise ValueError(msg)
    if len(value) > MAX_SIDE_OUTPUTS:
        msg = f"side_output_schemas: at most {MAX_SIDE_OUTPUTS} tags, got {len(value)}"
        raise ValueError(msg)
    pairs = []
    for tag, schema in value.items():
        if not isinstance(tag, OutputTag):
            msg = f"side_output_schemas: keys must be OutputTags, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        if tag == late_output_tag:
            msg = (
                f"side_output_schemas: {tag!r} is the tag of side_output_late_data; late rows "
                "keep the input columns and take no schema"
            )
            raise ValueError(msg)
        fields = parse_output_schema(schema, f"side_output_schemas[{tag!r}]")
        check_names(
            [*keys, "window_start", "window_end", *fields.names, "max_timestamp"],
            f"side output {tag.name!r}",
        )
        pairs.append((tag, fields))
    return tuple(pairs)


def no_side_output(tag: OutputTag, known: Sequence[OutputTag | None]) -> ValueError:
    """The error for ``get_side_output(tag)`` of a tag the result does not have."""
    have = [t for t in known if t is not None]
    msg = (
        f"no side output {tag!r}: request late rows with .side_output_late_data({tag!r}), or "
        f"declare the values of context.output({tag!r}, ...) with "
        f"side_output_schemas={{{tag!r}: '<schema>'}} in the terminal call (this result has "
        f"{have})"
    )
    return ValueError(msg)
