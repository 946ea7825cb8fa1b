"""Partitioned (per-key, per-namespace) state: descriptors, state views and the state table.

Triggers and process functions never keep state on ``self``: they ask their context for a
state object by descriptor, and the operator scopes it to the current key and window. All
state of one key lives in one :class:`StateTable` (descriptor name -> namespace -> value), so a
whole key can be snapshotted, shipped and restored as one value.

Examples
--------
>>> table = StateTable()
>>> count = table.state(ReducingStateDescriptor("count", lambda a, b: a + b), "w1")
>>> count.add(2); count.add(3); count.get()
5
>>> table.merge_namespaces(ReducingStateDescriptor("count", lambda a, b: a + b), "w2", ["w1"])
>>> table.state(ReducingStateDescriptor("count", lambda a, b: a + b), "w2").get()
5
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "KeyedStateStore",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "ReducingState",
    "ReducingStateDescriptor",
    "StateDescriptor",
    "StateTable",
    "ValueState",
    "ValueStateDescriptor",
    "merge_namespaces",
]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")

_MISSING: Any = object()


def _concat(a: list[Any], b: list[Any]) -> list[Any]:
    return [*a, *b]


@dataclass(frozen=True)
class ValueStateDescriptor(Generic[T]):
    """A single value per namespace; ``value()`` returns ``default`` until updated."""

    name: str
    default: T | None = None


@dataclass(frozen=True)
class ReducingStateDescriptor(Generic[T]):
    """A value combined with a reduce function as elements are added (mergeable)."""

    name: str
    reduce_function: Any  # Callable[[T, T], T] or a ReduceFunction

    def __post_init__(self) -> None:
        self.reducer()

    def reducer(self) -> Callable[[T, T], T]:
        fn = self.reduce_function
        if not isinstance(fn, type):
            fn = getattr(fn, "reduce", fn)
        if isinstance(fn, type) or not callable(fn):
            msg = (
                f"ReducingStateDescriptor({self.name!r}).reduce_function must be callable or a "
                f"ReduceFunction, got {self.reduce_function!r}"
            )
            raise ValueError(msg)
        return fn  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ListStateDescriptor(Generic[T]):
    """A list of values per namespace (mergeable by concatenation)."""

    name: str


@dataclass(frozen=True)
class AggregatingStateDescriptor(Generic[T, ACC, OUT]):
    """An accumulator of an ``AggregateFunction`` per namespace (mergeable)."""

    name: str
    aggregate_function: Any  # an AggregateFunction


@dataclass(frozen=True)
class MapStateDescriptor(Generic[K, V]):
    """A dict per namespace (not mergeable)."""

    name: str


StateDescriptor = (
    ValueStateDescriptor[Any]
    | ReducingStateDescriptor[Any]
    | ListStateDescriptor[Any]
    | AggregatingStateDescriptor[Any, Any, Any]
    | MapStateDescriptor[Any, Any]
)

_MERGEABLE = (ReducingStateDescriptor, ListStateDescriptor, AggregatingStateDescriptor)


class _View:
    __slots__ = ("_ns", "_table")

    def __init__(self, table: dict[Any, Any], namespace: Any) -> None:
        self._table = table
        self._ns = namespace

    def clear(self) -> None:
        """Remove the value of this namespace."""
        self._table.pop(self._ns, None)


class ValueState(_View, Generic[T]):
    """State view holding one value."""

    __slots__ = ("_default",)

    def __init__(self, table: dict[Any, Any], namespace: Any, default: T | None) -> None:
        super().__init__(table, namespace)
        self._default = default

    def value(self) -> T | None:
        return self._table.get(self._ns, self._default)

    def update(self, value: T | None) -> None:
        if value is None:
            self._table.pop(self._ns, None)
        else:
            self._table[self._ns] = value


class ReducingState(_View, Generic[T]):
    """State view that reduces added values into one."""

    __slots__ = ("_fn",)

    def __init__(self, table: dict[Any, Any], namespace: Any, fn: Callable[[T, T], T]) -> None:
        super().__init__(table, namespace)
        self._fn = fn

    def get(self) -> T | None:
        return self._table.get(self._ns)

    def add(self, value: T) -> None:
        current = self._table.get(self._ns, _MISSING)
        self._table[self._ns] = value if current is _MISSING else self._fn(current, value)


class ListState(_View, Generic[T]):
    """State view holding a list."""

    def get(self) -> list[T]:
        return list(self._table.get(self._ns, ()))

    def add(self, value: T) -> None:
        self._table.setdefault(self._ns, []).append(value)

    def add_all(self, values: Iterable[T]) -> None:
        values = list(values)
        if values:
            self._table.setdefault(self._ns, []).extend(values)

    def update(self, values: Iterable[T]) -> None:
        values = list(values)
        if values:
            self._table[self._ns] = values
        else:
            self._table.pop(self._ns, None)


class AggregatingState(_View, Generic[T, OUT]):
    """State view that folds added values into an ``AggregateFunction`` accumulator."""

    __slots__ = ("_agg",)

    def __init__(self, table: dict[Any, Any], namespace: Any, agg: Any) -> None:
        super().__init__(table, namespace)
        self._agg = agg

    def get(self) -> OUT | None:
        acc = self._table.get(self._ns, _MISSING)
        return None if acc is _MISSING else self._agg.get_result(acc)

    def add(self, value: T) -> None:
        acc = self._table.get(self._ns, _MISSING)
        if acc is _MISSING:
            acc = self._agg.create_accumulator()
        self._table[self._ns] = self._agg.add(value, acc)


class MapState(_View, Generic[K, V]):
    """State view holding a dict."""

    def _map(self) -> dict[K, V]:
        return self._table.setdefault(self._ns, {})  # type: ignore[no-any-return]

    def get(self, key: K) -> V | None:
        return self._table.get(self._ns, {}).get(key)  # type: ignore[no-any-return]

    def put(self, key: K, value: V) -> None:
        self._map()[key] = value

    def put_all(self, values: dict[K, V]) -> None:
        if values:
            self._map().update(values)

    def remove(self, key: K) -> None:
        m = self._table.get(self._ns)
        if m is not None:
            m.pop(key, None)
            if not m:
                del self._table[self._ns]

    def contains(self, key: K) -> bool:
        return key in self._table.get(self._ns, {})

    def keys(self) -> Iterator[K]:
        return iter(list(self._table.get(self._ns, {})))

    def items(self) -> Iterator[tuple[K, V]]:
        return iter(list(self._table.get(self._ns, {}).items()))

    def is_empty(self) -> bool:
        return not self._table.get(self._ns)


class KeyedStateStore(Protocol):
    """Gives state scoped to the current key (and window, for per-window stores)."""

    def get_state(self, descriptor: Any) -> Any:
        """The state object for ``descriptor`` (a ``*StateDescriptor``)."""
        ...


class StateTable:
    """All partitioned state of one key: ``descriptor name -> namespace -> value``.

    Empty values are removed, so :meth:`num_entries` counts live entries only.
    """

    __slots__ = ("kinds", "tables")

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, Any]] = {}
        self.kinds: dict[str, type] = {}

    def _table(self, descriptor: Any) -> dict[Any, Any]:
        name = descriptor.name
        kind = type(descriptor)
        known = self.kinds.get(name)
        if known is None:
            if not isinstance(descriptor, _DESCRIPTOR_TYPES):
                msg = f"descriptor must be a state descriptor, got {descriptor!r}"
                raise ValueError(msg)
            self.kinds[name] = kind
            self.tables[name] = {}
        elif known is not kind:
            msg = (
                f"state {name!r} was declared as {known.__name__} and is now requested as "
                f"{kind.__name__}"
            )
            raise ValueError(msg)
        return self.tables[name]

    def state(self, descriptor: Any, namespace: Any) -> Any:
        """The state view of ``descriptor`` in ``namespace``."""
        table = self._table(descriptor)
        if isinstance(descriptor, ValueStateDescriptor):
            return ValueState(table, namespace, descriptor.default)
        if isinstance(descriptor, ReducingStateDescriptor):
            return ReducingState(table, namespace, descriptor.reducer())
        if isinstance(descriptor, ListStateDescriptor):
            return ListState(table, namespace)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return AggregatingState(table, namespace, descriptor.aggregate_function)
        return MapState(table, namespace)

    def merge_namespaces(self, descriptor: Any, target: Any, sources: Iterable[Any]) -> None:
        """Merge the values of ``sources`` into ``target`` and remove them (Flink semantics)."""
        if not isinstance(descriptor, _MERGEABLE):
            msg = (
                f"state {descriptor.name!r} ({type(descriptor).__name__}) is not mergeable; "
                "only reducing, list and aggregating state can be merged"
            )
            raise ValueError(msg)
        table = self._table(descriptor)
        combine: Callable[[Any, Any], Any]
        if isinstance(descriptor, ReducingStateDescriptor):
            combine = descriptor.reducer()
        elif isinstance(descriptor, ListStateDescriptor):
            combine = _concat
        else:
            combine = descriptor.aggregate_function.merge
        merge_namespaces(table, target, sources, combine)

    def clear_namespace(self, namespace: Any) -> None:
        """Remove every state value of ``namespace``."""
        for table in self.tables.values():
            table.pop(namespace, None)

    def num_entries(self, namespace: Any = _MISSING) -> int:
        """Number of live (non-empty) values, in one namespace or in all."""
        if namespace is _MISSING:
            return sum(len(t) for t in self.tables.values())
        return sum(1 for t in self.tables.values() if namespace in t)

    def is_empty(self) -> bool:
        """Whether no value is stored at all."""
        return not any(self.tables.values())

    def namespaces(self) -> set[Any]:
        """Every namespace holding a value."""
        out: set[Any] = set()
        for t in self.tables.values():
            out.update(t)
        return out


_DESCRIPTOR_TYPES = (
    ValueStateDescriptor,
    ReducingStateDescriptor,
    ListStateDescriptor,
    AggregatingStateDescriptor,
    MapStateDescriptor,
)


def merge_namespaces(
    table: dict[Any, Any],
    target: Any,
    sources: Iterable[Any],
    merge: Callable[[Any, Any], Any],
) -> None:
    """Flink's heap ``mergeNamespaces``: the sources' values (removed) are merged in order,
    then the result into the target's value: ``merge(target, merge(merge(s1, s2), s3))``."""
    merged = _MISSING
    for source in sources:
        value = table.pop(source, _MISSING)
        if value is not _MISSING:
            merged = value if merged is _MISSING else merge(merged, value)
    if merged is not _MISSING:
        current = table.get(target, _MISSING)
        table[target] = merged if current is _MISSING else merge(current, merged)
