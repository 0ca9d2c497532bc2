"""`Record`: the base of the hot path's immutable records (plain `__slots__` classes, no `dataclasses`).

`import dataclasses` costs the hook about 8 ms (it imports `inspect`, `ast`, `dis`, `tokenize`), more than its
whole query on a small vault, so the records the hook creates are written out by hand. A subclass lists its fields
in `__slots__` and sets them in `__init__` with `_init`; it gets equality, hashing, `repr` and immutability.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    _R = TypeVar("_R", bound="Record")

_set = object.__setattr__


class Record:
    __slots__: tuple[str, ...] = ()

    def _init(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            _set(self, name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined,unused-ignore]

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self: "_R", **changes: object) -> "_R":
        """A copy with some fields changed (the hot path's `dataclasses.replace`)."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return type(self)(**values)
