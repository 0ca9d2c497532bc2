"""JSON for the hot path, on the C accelerator `_json` alone.

`import json` costs the hook more than reading the index: `json.decoder` and `json.scanner` import `re`, which
imports `enum`, `functools` and `collections`. The work is done by `_json` in either case, so `loads` and `dumps`
here drive it exactly as `json.JSONDecoder.decode` and `json.JSONEncoder.encode` (`_one_shot`, no indent) do, and
give the same objects and the same text. Anything else goes to the `json` package itself: an error (so the error
raised, a `json.JSONDecodeError` among them, is the one `json` raises), an object the encoder cannot take, an
interpreter without `_json`. Tests hold both equal to `json` on random documents.
"""

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator: `json` does it all
    _json = None  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE


class _DecoderContext:
    """What `_json.make_scanner` reads from a `json.JSONDecoder` built with no arguments."""

    __slots__ = ("strict", "object_hook", "object_pairs_hook", "parse_float", "parse_int", "parse_constant", "memo")

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
        self.memo: dict[str, str] = {}


_scan = _json.make_scanner(_DecoderContext()) if _json is not None else None  # type: ignore[arg-type]
_has_encoder = hasattr(_json, "make_encoder")


def loads(document: str | bytes) -> "Any":
    """`json.loads(document)`: the same object for every document `json.loads` accepts, its error for the rest."""
    if _scan is not None:
        try:
            text = document if isinstance(document, str) else document.decode(_encoding(document), "surrogatepass")
            value, end = _scan(text, len(text) - len(text.lstrip(_WHITESPACE)))
            if len(text.rstrip(_WHITESPACE)) <= end:  # nothing but whitespace after the value
                return value
        except Exception:  # any error: `json` raises its own below
            pass
    import json

    return json.loads(document)


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """`json.dumps(value, ensure_ascii=..., separators=..., sort_keys=...)`, the same text."""
    if _has_encoder:
        try:
            return _encode(value, ensure_ascii, separators, sort_keys)
        except Exception:  # an object JSON cannot hold, a cycle: `json` raises its own error below
            pass
    import json

    return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys)


def _encode(value: object, ensure_ascii: bool, separators: tuple[str, str] | None, sort_keys: bool) -> str:
    """`json.JSONEncoder(...).encode(value)`, with the C encoder `iterencode(_one_shot=True)` builds."""
    string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return string(value)
    item_separator, key_separator = separators if separators is not None else (", ", ": ")
    encoder = _json.make_encoder(
        {}, _unserializable, string, None, key_separator, item_separator, sort_keys, False, True
    )
    return "".join(encoder(value, 0))


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoding(data: bytes) -> str:
    """`json.detect_encoding`: the encoding of a JSON document given as bytes, by its BOM or its first zero bytes."""
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"
