"""The checks of a request payload built elsewhere (zeep's, for the zeep face), made on the
whole payload before its first byte is sent: valid against the schema, and the checks the
clients make of the same values as their arguments come in (the same functions, from
:mod:`faxws._protocol.checks`), so that what ``FaxClient`` refuses is refused here too. Each
refusal is a :class:`~faxws.errors.BadInputError` naming the element
(``/SendFax/Recipients/item[2]/RecipFaxNumber``)."""

from __future__ import annotations

from lxml import etree

from faxws._protocol.checks import (
    RECIPIENT_FIELDS,
    check_distinct_indexes,
    check_file_index,
    check_recipient,
    check_text,
)
from faxws._protocol.request_reader import Base64Decoder
from faxws.bindings import FaxJobFile, FaxJobRecipient
from faxws.errors import BadInputError
from faxws.validation import Validator, path_of

__all__ = ["check_payload"]

#: The children of a recipient and of a document, in schema order.
_RECIPIENT = tuple(f.name for f in FaxJobRecipient.__xml__.fields)
_FILE = tuple(f.name for f in FaxJobFile.__xml__.fields)
#: Texts the clients refuse empty wherever they are sent (user_id, job_id).
_REQUIRED = frozenset({"UserID", "JobId"})
#: A base64 text longer than this is checked here, and libxml2 sees its last 4 characters
#: only: its check of a document's whole text would cost half as much as the rest of the call.
LARGE_BINARY = 1024
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_STEP = 1 << 20  # characters per piece of a large text checked at a time


def check_payload(payload: etree._Element, schema: Validator | None) -> None:
    """Refuse ``payload`` if ``schema`` (when given) or the clients' checks would."""
    binary = schema.binary_elements if schema is not None else frozenset()
    empty = set()  # base64 elements holding nothing (read once here: a document is large)
    invalid = None  # a large base64 text that is not one
    moved: list[tuple[etree._Element, etree._Element]] = []
    try:
        for element in payload.iter(*(f"{{*}}{name}" for name in binary)):
            text = element.text or ""
            if not text.strip():
                empty.add(element)
                continue
            if len(text) <= LARGE_BINARY:
                continue
            if len(text) % 4 == 0 and _plain_base64(text):
                # Whole quanta of the alphabet, then the last one, which libxml2 checks
                # (padding): together, exactly a valid xs:base64Binary.
                tail = text[-4:]
            elif _spaced_base64(text):
                tail = ""
            else:
                invalid = element
                break
            stand_in = etree.Element(element.tag)
            stand_in.text = tail
            parent = element.getparent()
            assert parent is not None
            parent.replace(element, stand_in)
            moved.append((element, stand_in))
        issues = None
        if invalid is None and schema is not None:
            issues = schema.schema_issues(payload, max_issues=1)
    finally:
        for element, stand_in in moved:  # the caller's tree as it was
            parent = stand_in.getparent()
            assert parent is not None
            parent.replace(stand_in, element)
    if invalid is not None:  # not quoted: it is a document
        raise BadInputError(path_of(payload, invalid), "is not a valid xs:base64Binary")
    if issues:
        raise BadInputError(issues[0].path, issues[0].message, issues=issues)
    _check_values(payload, binary, empty)


def _plain_base64(text: str) -> bool:
    """Whether all of ``text`` but its last 4 characters is of the base64 alphabet (no
    padding, no white space), checked in pieces so that no copy of a document is made."""
    end = len(text) - 4
    for start in range(0, end, _STEP):
        try:
            piece = text[start : min(start + _STEP, end)].encode("ascii")
        except UnicodeEncodeError:
            return False
        if piece.translate(None, _ALPHABET):
            return False
    return True


def _spaced_base64(text: str) -> bool:
    """Whether ``text`` is base64 with XML white space in it (rare, and slower)."""
    decoder = Base64Decoder("", lambda _data: None)  # as the simulator reads one
    try:
        decoder.write(text)
        decoder.finish()
    except ValueError:
        return False
    return True


def _check_values(
    payload: etree._Element, binary: frozenset[str], empty: set[etree._Element]
) -> None:
    """The clients' checks, on a payload valid against the schema."""
    files: dict[etree._Element, list[tuple[etree._Element, int]]] = {}
    for element in payload.iter(etree.Element):
        children = [c for c in element if isinstance(c.tag, str)]
        if not children:
            name = str(element.tag).rpartition("}")[2]
            if name in binary:
                if element in empty and name == _FILE[2]:
                    raise BadInputError(path_of(payload, element), "is empty")
                continue
            try:
                check_text(name, element.text or "", required=name in _REQUIRED)
            except BadInputError as exc:
                raise _at(payload, element, exc) from None
            continue
        names = tuple(str(c.tag).rpartition("}")[2] for c in children)
        if names == _RECIPIENT:
            try:
                check_recipient(*(c.text or "" for c in children))
            except BadInputError as exc:
                raise _at(payload, children[RECIPIENT_FIELDS.index(exc.field)], exc) from None
        elif names == _FILE:
            try:
                index = check_file_index(_FILE[0], int(children[0].text or ""))
            except BadInputError as exc:
                raise _at(payload, children[0], exc) from None
            parent = element.getparent()
            assert parent is not None
            files.setdefault(parent, []).append((element, index))
    for items in files.values():
        check_distinct_indexes(
            [index for _, index in items],
            lambda i, items=items: path_of(payload, items[i][0]),  # type: ignore[misc]
            "/FileIndex",
        )


def _at(payload: etree._Element, element: etree._Element, exc: BadInputError) -> BadInputError:
    """``exc``'s problem, naming ``element``."""
    return BadInputError(path_of(payload, element), exc.problem)
