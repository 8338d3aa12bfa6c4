"""kio's entity reader, made to skip a tagged field of a tag its schema does not name, as Kafka does.

KIP-482: a flexible version's entity ends with tagged fields, each a tag, a size and that many
bytes; a reader skips a tag it does not know (Kafka's generated ``read`` keeps it as an unknown
tagged field and goes on), which is how newer clients add optional fields without a new version.
kio 0.6.5's native reader (``rust/src/schema.rs``, ``parse_entity``) raises KeyError "Unknown
tagged field tag: N" instead, so one optional field from a newer client made the whole request
unreadable and closed the connection.

``entity_reader`` is kio's own (native, fast) reader until it meets such a tag; then, and only
then, the same request is read again by ``lenient_entity_reader``: kio's schema walked in Python,
each primitive field read by kio's own native field reader, known tagged fields read as kio reads
them, unknown ones skipped by their size. No API has a codec of its own here: every kio schema
is read this way. The fix kio itself wants is a few lines in ``parse_entity`` (skip ``size``
bytes where it raises), with a test: ci/upstream/kio-skip-unknown-tagged-fields.patch, against
kio's main branch (f4c187a), which still raises; ``KIO_VERSIONS`` pins the kio this was checked
against (0.6.5, the newest release), so a kio that changes the reader is looked at again, and
this module goes once a kio release skips them.
"""
from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

import kio
from kio.serial import entity_reader as kio_entity_reader
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_field_tag, is_optional
from kio.serial._parse import get_field_reader
from kio.serial.readers import (
    compact_array_reader, legacy_array_reader, read_int8, read_unsigned_varint,
)

# The kio releases whose native reader this wraps (pyproject.toml pins the same range).
KIO_VERSIONS = ("0.6.",)
assert kio.__version__.startswith(KIO_VERSIONS), f"kio {kio.__version__}: check its tagged-field reader again"

_UNKNOWN_TAG = "Unknown tagged field tag"


def is_unknown_tag(exc: BaseException) -> bool:
    """Whether kio refused bytes only for a tagged field of a tag its schema does not name."""
    return isinstance(exc, KeyError) and bool(exc.args) and str(exc.args[0]).startswith(_UNKNOWN_TAG)


@cache
def entity_reader(entity_type: type) -> Any:
    """A reader ``(buffer, offset) -> (entity, size)`` for ``entity_type``: kio's, falling back to
    ``lenient_entity_reader`` when the bytes hold a tag kio does not know."""
    native = kio_entity_reader(entity_type)
    lenient = lenient_entity_reader(entity_type)

    def read(buffer, offset: int) -> tuple[Any, int]:
        try:
            return native(buffer, offset)
        except KeyError as exc:
            if not is_unknown_tag(exc):
                raise
            return lenient(buffer, offset)
    return read


@cache
def lenient_entity_reader(entity_type: type, nullable: bool = False) -> Any:
    """kio's ``parse_entity`` in Python, except that a tagged field of an unknown tag is skipped."""
    flexible = bool(entity_type.__flexible__)
    is_request_header = entity_type.__name__ == "RequestHeader"
    plain: list[tuple[str, Any]] = []
    tagged: dict[int, tuple[str, Any]] = {}
    defaults: dict[str, Any] = {}
    for field in fields(entity_type):
        tag = get_field_tag(field)
        reader = _field_reader(entity_type, field, is_request_header, tag is not None, flexible)
        if tag is None:
            plain.append((field.name, reader))
        else:
            tagged[int(tag)] = (field.name, reader)
            defaults[field.name] = get_tagged_field_default(field)

    def read(buffer, offset: int) -> tuple[Any, int]:
        start = offset
        if nullable:
            marker, size = read_int8(buffer, offset)
            offset += size
            if marker == -1:
                return None, offset - start
        values: dict[str, Any] = {}
        for name, field_reader in plain:
            values[name], size = field_reader(buffer, offset)
            offset += size
        if flexible:
            values.update(defaults)
            count, size = read_unsigned_varint(buffer, offset)
            offset += size
            for _ in range(count):
                tag, size = read_unsigned_varint(buffer, offset)
                offset += size
                length, size = read_unsigned_varint(buffer, offset)
                offset += size
                if offset + length > len(buffer):
                    raise ValueError(f"tagged field {tag} of {length} bytes runs past the end at {offset}")
                known = tagged.get(int(tag))
                if known is not None:
                    name, field_reader = known
                    values[name], _ = field_reader(buffer, offset)
                offset += length  # Kafka: a tagged field is as long as its size says
        return entity_type(**values), offset - start
    return read


def _field_reader(entity_type: type, field: Any, is_request_header: bool, is_tagged: bool, flexible: bool) -> Any:
    """One field's reader: nested entities read leniently too, primitives by kio's native reader."""
    field_class = classify_field(field)
    if isinstance(field_class, EntityField):
        return lenient_entity_reader(field_class.type_, is_optional(field))
    if isinstance(field_class, EntityTupleField):
        items = lenient_entity_reader(field_class.type_)
        return compact_array_reader(items) if flexible else legacy_array_reader(items)
    return get_field_reader(entity_type, field, is_request_header, is_tagged)
