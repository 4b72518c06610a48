"""Validation of documents with long runs of sibling elements, in time linear in the issues.

lxml works out libxml2's path of every error's node as the error arrives, and libxml2 numbers
an element by walking all its preceding siblings: N issues among N siblings cost N x N steps
(0.3-0.6 s for 8,000). This module gives the same errors, in the same order, without ever
having an error reported at an element among thousands of siblings:

1. The payload is validated against a derived schema in which every repeatable local element
   declaration (``item`` with ``maxOccurs="unbounded"``, the source of long runs) accepts
   anything: its content is skipped. Everything outside those elements is checked as usual,
   the parents' content models included, so this step finds every error that is not inside
   such an element. The derived type also gives each element it accepted a default attribute
   naming the declaration (``attribute_defaults``): libxml2 itself marks exactly the elements
   that plain validation would have checked against that declaration.
2. Each marked element is validated on its own, as the root, against a schema with a global
   declaration copied from the local one (one schema per declaration: several types share
   the name ``item``); repeatable elements inside it are skipped and marked the same way,
   and so on down.
3. The errors are merged in libxml2's order: a marked element's errors come after the errors
   before its start and before those after its end (a parent's "missing child" comes at the
   parent's end, after its children's errors).

Why the errors are the same: content models see element names only, and what libxml2 skips
after an error stays inside the element whose content has it, so step 1 checks every element
outside the marked ones as plain validation does, and marks exactly the elements plain
validation checks against a repeatable declaration. A marked element validated as the root
against a copy of its (local) declaration goes through the same checks as when reached as a
child, on the same nodes: the same messages and lines (one line case aside, see
:func:`_record`), and paths ending in the same steps. Only schemas and documents for which
this holds take this way (:class:`RunSchemas` checks the schema, :func:`applies` and
:func:`_marked` the document; an error that cannot be placed sends it back too); anything
else is validated the plain way. The marks are attributes written into the tree: only a
tree parsed for this validation, which nobody else sees, is given to :func:`records`.
"""

from __future__ import annotations

import copy
import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lxml import etree

XS = "http://www.w3.org/2001/XMLSchema"
XSI = "http://www.w3.org/2001/XMLSchema-instance"

#: The attribute (no namespace) that marks an element skipped against a repeatable
#: declaration; its value is the declaration's number.
MARK = "faxws-run-decl"

#: One error: line, the element its path starts from, the steps below that element, message.
Record = tuple[int, etree._Element, tuple[str, ...], str]
#: A compiled set of derived schemas: the skipping one, and one per repeatable declaration.
Kit = tuple[etree.XMLSchema, list[etree.XMLSchema]]
#: Resolves steps below an element the way the validator resolves libxml2 paths.
Walk = Callable[[etree._Element, tuple[str, ...]], "etree._Element | None"]

# Schema constructs whose effect on validation the steps cover. Not covered: imports and
# includes (other schemas), element wildcards and xs:anyType (they look up global
# declarations, and the derived schemas add some), identity constraints and ID/IDREF types
# (document-wide tables), substitution groups, named model groups and complex content
# derivation (particles shared between types), value constraints (with attribute_defaults,
# libxml2 would write them into the tree).
_ALLOWED = frozenset(
    f"{{{XS}}}{name}"
    for name in (
        *("schema", "complexType", "simpleType", "sequence", "choice", "all", "element"),
        *("attribute", "attributeGroup", "anyAttribute", "simpleContent", "restriction"),
        *("extension", "list", "union", "enumeration", "pattern", "length", "minLength"),
        *("maxLength", "minInclusive", "maxInclusive", "minExclusive", "maxExclusive"),
        *("totalDigits", "fractionDigits", "whiteSpace"),
    )
)
_BARRED_TYPES = frozenset(
    f"{{{XS}}}{name}"
    for name in ("ID", "IDREF", "IDREFS", "ENTITY", "ENTITIES", "NOTATION", "anyType")
)
_GROUPS = frozenset(f"{{{XS}}}{name}" for name in ("sequence", "choice", "all"))
_ELEMENT, _COMPLEX = f"{{{XS}}}element", f"{{{XS}}}complexType"
_ANNOTATION = f"{{{XS}}}annotation"
#: What a skipping declaration keeps of the repeatable one: what its parent's content model
#: sees (the name, the namespace, how often).
_KEPT = ("name", "form", "minOccurs", "maxOccurs")


class SchemaNotCoveredError(Exception):
    """The schema uses something the run-aware validation does not cover."""


class DocumentNotCoveredError(Exception):
    """This document is to be validated the plain way."""


def _qname(element: etree._Element, value: str) -> str:
    prefix, _, local = value.rpartition(":")
    namespace = element.nsmap.get(prefix or None)
    if namespace is None and prefix:
        raise SchemaNotCoveredError(f"undeclared prefix in {value!r}")
    return f"{{{namespace}}}{local}" if namespace else local


def _repeats(value: str | None) -> bool:
    if value is None:
        return False
    return value == "unbounded" or (value.isdigit() and int(value) > 1)


def _particles(complex_type: etree._Element) -> Iterator[etree._Element]:
    """The element particles of a complex type's content model (not those of its children's
    types)."""
    groups = [c for c in complex_type if c.tag in _GROUPS]
    while groups:
        group = groups.pop()
        for child in group:
            if child.tag == _ELEMENT:
                yield child
            elif child.tag in _GROUPS:
                groups.append(child)


class RunSchemas:
    """The derived schemas of one schema document; :meth:`take` a compiled set for one
    validation, :meth:`give` it back (as the validator does with its plain schema copies)."""

    def __init__(self, schema: etree._Element) -> None:
        self._check(schema)
        elements = list(schema.iter(_ELEMENT))
        runs = self._runs(schema)
        if not runs:
            raise SchemaNotCoveredError("no repeatable local element declarations")
        position = {e: i for i, e in enumerate(elements)}
        self._positions = [position[e] for e in runs]
        self._by_tag: dict[str, list[int]] = {}
        for number, decl in enumerate(runs):
            tag = f"{{{schema.get('targetNamespace')}}}{decl.get('name')}"
            self._by_tag.setdefault(tag, []).append(number)
        self.nested = [self._holds_runs(schema, decl, set(runs)) for decl in runs]
        self._skipping = self._derive(schema, None)
        self._roots = [self._derive(schema, i) for i in range(len(runs))]
        self._idle = [self._compile()]  # compiled now, so that a failure shows now

    # -- which declarations --

    @staticmethod
    def _check(schema: etree._Element) -> None:
        if schema.tag != f"{{{XS}}}schema" or not schema.get("targetNamespace"):
            raise SchemaNotCoveredError("no target namespace")
        nsmap = schema.nsmap
        stack = [schema]
        while stack:
            element = stack.pop()
            if element.tag == _ANNOTATION or not isinstance(element.tag, str):
                continue
            if element.tag not in _ALLOWED:
                raise SchemaNotCoveredError(f"{element.tag} is not covered")
            if element.nsmap != nsmap:
                raise SchemaNotCoveredError("namespace declarations below the schema element")
            if element.tag in (_ELEMENT, f"{{{XS}}}attribute") and (
                element.get("default") is not None or element.get("fixed") is not None
            ):
                raise SchemaNotCoveredError("a value constraint")
            if element.tag == _ELEMENT:
                if element.get("substitutionGroup") is not None or element.get("abstract"):
                    raise SchemaNotCoveredError("an abstract element or a substitution group")
                if (
                    element.get("name") is not None
                    and element.get("type") is None
                    and not any(c.tag in (_COMPLEX, f"{{{XS}}}simpleType") for c in element)
                ):
                    raise SchemaNotCoveredError("an element of xs:anyType")
            for name in ("type", "base", "itemType", "memberTypes"):
                for value in (element.get(name) or "").split():
                    if _qname(element, value) in _BARRED_TYPES:
                        raise SchemaNotCoveredError(f"type {value}")
            stack.extend(element)

    @staticmethod
    def _runs(schema: etree._Element) -> list[etree._Element]:
        """The local element declarations whose elements may come in long runs: repeatable,
        in the target namespace (their global copies are), named uniquely in their content
        model and unlike any global element."""
        qualified = schema.get("elementFormDefault") == "qualified"
        globals_ = {e.get("name") for e in schema if e.tag == _ELEMENT}
        found = []
        for decl in schema.iter(_ELEMENT):
            name = decl.get("name")
            if decl.getparent() is schema or name is None or name in globals_:
                continue
            form = decl.get("form")
            if not (form == "qualified" or (form is None and qualified)):
                continue
            repeats = _repeats(decl.get("maxOccurs"))
            owner = decl.getparent()
            while owner is not None and owner.tag in _GROUPS:
                repeats = repeats or _repeats(owner.get("maxOccurs"))
                owner = owner.getparent()
            if not repeats or owner is None or owner.tag != _COMPLEX:
                continue
            if sum(p.get("name") == name for p in _particles(owner)) != 1:
                continue
            found.append(decl)
        return found

    @staticmethod
    def _holds_runs(
        schema: etree._Element, decl: etree._Element, runs: set[etree._Element]
    ) -> bool:
        """Whether elements of ``decl`` may hold marked elements (then they are looked for)."""
        named = {t.get("name"): t for t in schema if t.tag == _COMPLEX}
        globals_ = {e.get("name"): e for e in schema if e.tag == _ELEMENT}
        namespace = schema.get("targetNamespace")
        seen: set[etree._Element] = set()
        pending = [decl]
        while pending:
            element = pending.pop()
            ref = element.get("ref")
            if ref is not None:
                element = globals_.get(_qname(element, ref).rpartition("}")[2], element)
            types = [c for c in element if c.tag == _COMPLEX]
            type_name = element.get("type")
            if type_name is not None:
                qname = _qname(element, type_name)
                if qname.startswith(f"{{{namespace}}}"):
                    types.extend(t for t in [named.get(qname.rpartition("}")[2])] if t is not None)
            for complex_type in types:
                if complex_type in seen:
                    continue
                seen.add(complex_type)
                for particle in _particles(complex_type):
                    if particle in runs:
                        return True
                    pending.append(particle)
        return False

    # -- the derived documents --

    def _derive(self, schema: etree._Element, root: int | None) -> etree._Element:
        """The schema with every repeatable declaration skipping and marking its elements,
        plus (``root``) a global copy of that declaration, untouched but for the repeatable
        declarations inside it."""
        doc = copy.deepcopy(schema)
        elements = list(doc.iter(_ELEMENT))
        decls = [elements[p] for p in self._positions]
        copied: etree._Element | None = None
        if root is not None:
            original = decls[root]
            copied = copy.deepcopy(original)
            inside = {e: i for i, e in enumerate(original.iter(_ELEMENT))}
            copies = list(copied.iter(_ELEMENT))
            for number, decl in enumerate(decls):
                if decl is not original and decl in inside:
                    self._skip(copies[inside[decl]], number)
            for name in ("minOccurs", "maxOccurs", "form", "id"):  # not for a global one
                if name in copied.attrib:
                    del copied.attrib[name]
        for number, decl in enumerate(decls):
            self._skip(decl, number)
        if copied is not None:
            doc.append(copied)
        return doc

    @staticmethod
    def _skip(decl: etree._Element, number: int) -> None:
        """Turn ``decl`` into one that takes any content and attributes without looking at
        them, and gives its element the mark."""
        keep = [(k, v) for k, v in decl.attrib.items() if k in _KEPT]
        for child in list(decl):
            decl.remove(child)
        decl.attrib.clear()
        for name, value in keep:
            decl.set(name, value)
        anything = etree.SubElement(decl, _COMPLEX, mixed="true")
        sequence = etree.SubElement(anything, f"{{{XS}}}sequence")
        etree.SubElement(
            sequence, f"{{{XS}}}any", processContents="skip", minOccurs="0", maxOccurs="unbounded"
        )
        etree.SubElement(anything, f"{{{XS}}}attribute", name=MARK, default=str(number))
        etree.SubElement(anything, f"{{{XS}}}anyAttribute", processContents="skip")

    # -- compiled copies --

    def _compile(self) -> Kit:
        try:
            return _marking(self._skipping), [_marking(doc) for doc in self._roots]
        except etree.XMLSchemaParseError as exc:
            raise SchemaNotCoveredError(str(exc)) from exc

    def take(self) -> Kit:
        """A compiled set no other thread uses (see ``Validator._validate``)."""
        try:
            return self._idle.pop()
        except IndexError:
            return self._compile()

    def give(self, kit: Kit) -> None:
        self._idle.append(kit)

    def run_parents(self, payload: etree._Element, runs: int) -> list[etree._Element]:
        """The elements below ``payload`` with more than ``runs`` children named like a
        repeatable declaration: the runs this way is for."""
        counts: dict[etree._Element, int] = {}
        for element in payload.iter(*self._by_tag):
            parent = element.getparent()
            if parent is not None:
                counts[parent] = counts.get(parent, 0) + 1
        return [parent for parent, count in counts.items() if count > runs]

    def sampled_issues(self, kit: Kit, parents: list[etree._Element]) -> bool:
        """Whether one of a few children of each parent (its first eight, which show issues
        that come every so often, and eight spread over the rest) fits none of the
        repeatable declarations of its name: then the run likely has many issues, and this
        way is worth it. Without any, plain validation is quicker (it validates the runs in
        one pass, not each element on its own), and with a few issues still quick."""
        roots = kit[1]
        for parent in parents:
            children = list(parent.iterchildren(etree.Element))
            for child in children[:8] + children[8 :: max(1, len(children) // 8)]:
                numbers = self._by_tag.get(child.tag, ())
                fits = False
                for number in numbers:
                    fits = roots[number].validate(child)
                    if self.nested[number]:
                        etree.strip_attributes(child, MARK)
                    if fits:
                        break
                if numbers and not fits:
                    return True
        return False


def _marking(doc: etree._Element) -> etree.XMLSchema:
    # attribute_defaults: libxml2 writes the mark's default into each element it accepted
    # (the stubs do not know the argument).
    return etree.XMLSchema(doc, attribute_defaults=True)  # type: ignore[call-arg]


# -- the document ---------------------------------------------------------------------------


def applies(payload: etree._Element) -> bool:
    """Whether the steps cover this document's attributes and nodes (see the module)."""
    if payload.xpath("boolean(descendant-or-self::*/@*)") and payload.xpath(
        f"boolean(descendant-or-self::*/@*[namespace-uri()='{XSI}'] or "
        f"descendant-or-self::*[@{MARK}])"
    ):
        return False  # xsi:type and xsi:nil change the declarations; a mark is ours
    return next(payload.iter(etree.Entity), None) is None  # libxml2 stops at those


def _marked(root: etree._Element) -> tuple[list[etree._Element], list[int]]:
    """The marked elements below ``root`` in document order, and their declarations' numbers,
    from a walk that does not go into them (their content is not validated yet). The walk
    also checks that libxml2's path of each element it passes leads back to it the way the
    validator reads paths (see :func:`_named_alike`); inside a marked element, that matters
    once the element is validated in turn, and walked if it holds marked ones."""
    marked: list[etree._Element] = []
    numbers: list[int] = []
    stack = [(root, root.iterchildren(etree.Element), False)]
    while stack:
        parent, children, named = stack[-1]
        for child in children:
            named = named or child.prefix is not None or child.tag[0] != "{"
            number = child.get(MARK)
            if number is not None:
                marked.append(child)
                numbers.append(int(number))
            elif len(child):
                stack[-1] = (parent, children, named)
                stack.append((child, child.iterchildren(etree.Element), False))
                break
        else:
            stack.pop()
            if named and not _named_alike(parent):
                raise DocumentNotCoveredError
    return marked, numbers


def _named_alike(parent: etree._Element) -> bool:
    """Whether libxml2's path steps of the children lead back to them the way the validator
    reads them. ``*[3]`` (an element in a default namespace) counts the element siblings,
    as the validator does; ``f:item[3]`` counts the siblings with the same name and prefix,
    and ``item[3]`` (no namespace) those with the same name and no namespace, where the
    validator counts those with the same local name: they must be the same ones. libxml2
    also cuts a prefixed name off at 98 characters."""
    kinds: dict[str, str | None] = {}
    for child in parent.iterchildren(etree.Element):
        qname = etree.QName(child)
        prefix = child.prefix
        if prefix is not None and len(prefix) + len(qname.localname) > 90:
            return False
        kind = None if qname.namespace is not None and prefix is None else prefix or ""
        if kinds.setdefault(qname.localname, kind) != kind:
            return False
    return True


def records(kit: Kit, nested: list[bool], payload: etree._Element, walk: Walk) -> list[Record]:
    """The errors of ``payload`` as plain validation finds them, in its order. Raises
    :class:`DocumentNotCoveredError` (the marks taken off again) when an error cannot be
    placed; the caller then validates the plain way."""
    try:
        return _Blocks(kit, nested, payload, walk).block(payload, kit[0])
    except DocumentNotCoveredError:
        etree.strip_attributes(payload, MARK)
        raise


class _Blocks:
    """One validation's steps. A class, not closures calling each other: those would be a
    reference cycle holding the tree and its paths until the garbage collector's next full
    pass, which then costs tens of milliseconds wherever it falls."""

    def __init__(self, kit: Kit, nested: list[bool], payload: etree._Element, walk: Walk):
        self.roots, self.nested, self.payload, self.walk = kit[1], nested, payload, walk

    def block(self, root: etree._Element, schema: etree.XMLSchema) -> list[Record]:
        """The errors of ``root`` against ``schema``, with those of the elements it marked,
        each in its place."""
        entries = _entries(schema, root)
        found = [_record(entry, root, self.payload) for entry in entries]
        marked, numbers = _marked(root)
        if not marked:
            return found
        etree.strip_attributes(root, MARK)  # every mark below root is one of these, read
        if not found:
            return [r for e, n in zip(marked, numbers, strict=True) for r in self.item(e, n)]
        keys = _keys(root, entries, found, marked, self.walk)
        merged: list[Record] = []
        i = 0
        for element, number, key in zip(marked, numbers, keys.marked, strict=True):
            while i < len(found) and keys.errors[i] < key:
                merged.append(found[i])
                i += 1
            merged.extend(self.item(element, number))
        merged.extend(found[i:])
        return merged

    def item(self, element: etree._Element, number: int) -> list[Record]:
        schema = self.roots[number]
        if self.nested[number]:
            return self.block(element, schema)
        # Nothing inside is marked: no walk, and no keys (most elements of runs are here).
        return [_record(entry, element, self.payload) for entry in _entries(schema, element)]


def _entries(schema: etree.XMLSchema, root: etree._Element) -> list[etree._LogEntry]:
    if schema.validate(root):
        return []
    # A copy: the same schema validates the next element before these are read (nested).
    entries: list[etree._LogEntry] = list(schema.error_log)  # type: ignore[call-overload]
    return entries


def _record(entry: etree._LogEntry, root: etree._Element, payload: etree._Element) -> Record:
    path = entry.path or ""
    if not path.startswith("/"):
        raise DocumentNotCoveredError
    steps = tuple(s for s in path.split("/") if s)[1:]
    line = entry.line
    if line == 65535 and not steps and root is not payload:
        # From line 65535 on, libxml2 asks an element's neighbours for its line; the stand-in
        # lxml makes for an element validated as the root has none, the element itself has.
        # (An attribute's error is reported at its element, so has the element's path.)
        line = root.sourceline or 0
    return line, root, steps, entry.message


@dataclass
class _Keys:
    """Places in document order, as numbers: ``errors[i] < marked[j]`` when the i-th error
    comes before the j-th marked element's errors."""

    errors: list[int]
    marked: list[int]


def _keys(
    root: etree._Element,
    entries: list[etree._LogEntry],
    found: list[Record],
    marked: list[etree._Element],
    walk: Walk,
) -> _Keys:
    """Each node's start is an even number in document order, ``2 * i``; an error at an
    element's start sorts there, before its descendants, one at its end after them, and a
    marked element's errors where its start is. At an element holding marked ones, an error
    must be one of those whose place is known: its attributes' (at its start), text in
    element-only content (where the text is), missing children (at its end)."""
    order = {node: i for i, node in enumerate(root.iter())}
    starts = [order[m] for m in marked]

    def end(node: etree._Element) -> int:
        """Where the nodes after ``node``'s descendants start."""
        while node is not root:
            following = node.getnext()
            if following is not None:
                return order[following]
            parent = node.getparent()
            if parent is None:
                break
            node = parent
        return len(order)

    texts: dict[etree._Element, list[int]] = {}

    def text(node: etree._Element) -> int:
        """Where the next text libxml2 complains about in ``node`` is: each text node that is
        not all blanks, in turn (XPath gives them one by one, as libxml2 has them)."""
        places = texts.get(node)
        if places is None:
            found: list[Any] = node.xpath("text()")  # type: ignore[assignment]
            places = texts[node] = [
                2 * order[node] + 1 if t.is_text else 2 * end(t.getparent()) - 1
                for t in reversed(found)
                if t.strip(" \t\r\n")
            ]
        if not places:
            raise DocumentNotCoveredError
        return places.pop()

    keys = []
    for entry, (_, _, steps, _) in zip(entries, found, strict=True):
        node = walk(root, steps)
        if node is None:
            raise DocumentNotCoveredError
        first, after = order[node], end(node)
        key = 2 * first
        if bisect_right(starts, first) < bisect_left(starts, after):  # it holds marked ones
            where = _where(entry, node)
            if where == _TEXT:
                key = text(node)
            elif where == _END:
                key = 2 * after - 1
        keys.append(key)
    if any(a > b for a, b in itertools.pairwise(keys)):
        raise DocumentNotCoveredError  # not libxml2's order: something is misplaced
    return _Keys(keys, [2 * s for s in starts])


_START, _TEXT, _END = range(3)


def _where(entry: etree._LogEntry, node: etree._Element) -> int:
    """Where in an element holding marked elements an error at it is reported."""
    qname = etree.QName(node)
    name = f"{{{qname.namespace}}}{qname.localname}" if qname.namespace else qname.localname
    # An attribute's error names the attribute after the element (and lxml gives the
    # element's path); a required attribute missing is the element's own.
    if (
        entry.message.startswith(f"Element '{name}', attribute '")
        or entry.type == etree.ErrorTypes.SCHEMAV_CVC_COMPLEX_TYPE_4
    ):
        return _START
    if entry.type == etree.ErrorTypes.SCHEMAV_CVC_COMPLEX_TYPE_2_3:
        return _TEXT  # "Character content other than whitespace is not allowed"
    if (
        entry.type == etree.ErrorTypes.SCHEMAV_ELEMENT_CONTENT
        and "Missing child element(s)" in entry.message
    ):
        return _END
    raise DocumentNotCoveredError
