"""Push notifications of a job's completion: read what the service posts, and write it.

A job that asks for it (FaxJob's Notify* fields) has its outcome posted to its
NotifyDestination once it completes, in one of three flavours with the same fields:
``form`` (``application/x-www-form-urlencoded``); ``multipart`` (``multipart/form-data``, sent
when the delivered image is included: the image is the part named ``DeliveredImage``, whatever
its file name or type); ``soap`` (``text/xml`` or ``application/soap+xml`` with the action
``C3FDNS/FaxDeliveryNotification`` in SOAPAction or the media type's ``action``: one
``FaxDeliveryNotification`` in namespace ``C3FDNS``, its fields in that namespace or in none).

:func:`parse_notification` reads one from its body and headers (names in any case; no web
framework needed), or raises a :class:`NotificationError` naming the field and the problem:

- FaxJobId (not empty) and FaxJobStatusId are required; any other field may be missing or
  empty: ``""`` for text, ``None`` for the numbers, the date and the image.
- Numbers are decimal xs:int values (``-`` and ASCII digits; spaces around them dropped); the
  date is the vendor's ``YYYY-MM-DDTHH:MM:SS+HH:MM``. Text is UTF-8 whatever charset a form
  declares (SOAP's own encoding declaration applies); an image sent as text (SOAP, or a
  URL-encoded form) is base64. A field given twice is refused; fields of other names are ignored.
- Limits: the body at most ``max_bytes`` (:data:`DEFAULT_MAX_BYTES`), checked before any parse;
  at most :data:`MAX_FIELDS` fields or parts, :data:`MAX_PART_HEADER_BYTES` of a part's headers,
  :data:`MAX_TEXT_CHARS` characters of a text field. SOAP goes through faxws's hardened XML
  parse (no DTD, no entities, no network; libxml2's limit of 10 MB per text node puts a SOAP
  image at about 7 MiB at most), multipart through the standard library's ``email`` parser with
  its ``compat32`` policy (the newer policies' header parser recurses on nested comments); a
  part that is itself multipart, or a message, is refused before that parse (the parser would
  recurse into it, once per level, its sub-parts neither counted nor bounded). That
  parser works on lines of text: a multipart body takes up to about 9 times its size in memory
  while it is read (SOAP about 3), which ``max_bytes`` should allow for.
- With ``credentials`` (the job's NotifyAuthUser and NotifyAuthPassword) the request must carry
  them as HTTP Basic credentials, compared in constant time before the body is looked at;
  :func:`check_credentials` does that alone, for a receiver that checks before reading a body.

:class:`NotificationError` is a :class:`~faxws.errors.FaxWSError` but no ``ProtocolError`` (an
unreadable answer to a call of faxws's, which may have been delivered); its subclass
:class:`NotificationAuthError` is no ``AuthenticationError`` (the service refusing faxws's own
credentials). Messages quote at most a short excerpt of what was received, the password masked
(and so is the credentials' HTTP Basic token).
:func:`wsgi_app` is a whole receiver as a WSGI application (any WSGI server, or the standard
library's ``wsgiref``), handing each final event to a callable of yours.
:func:`render_notification` writes an event as the service would (the simulator's pushes).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import email.message
import email.policy
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from email.parser import BytesFeedParser, HeaderParser
from typing import Any, Literal, NoReturn
from urllib.parse import unquote_to_bytes, urlencode

from lxml import etree

from faxws._protocol import safexml
from faxws._protocol.assumptions import format_datetime, parse_datetime
from faxws._protocol.redact import redact
from faxws._protocol.soap import SOAP11_NS, SOAP12_NS
from faxws.errors import BadInputError, FaxWSError
from faxws.status import JobStatus, job_status

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_FIELDS",
    "MAX_PART_HEADER_BYTES",
    "MAX_TEXT_CHARS",
    "DeliveryNotification",
    "Flavour",
    "NotificationAuthError",
    "NotificationError",
    "WSGIApp",
    "check_credentials",
    "parse_notification",
    "render_notification",
    "wsgi_app",
]

Flavour = Literal["form", "multipart", "soap"]
_Headers = Mapping[str, str] | Iterable[tuple[str, str]]
#: A WSGI application (PEP 3333), as :func:`wsgi_app` makes one.
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: The largest body :func:`parse_notification` reads by default (64 MiB).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Most fields of a form, or parts of a multipart body.
MAX_FIELDS = 100
#: Most bytes of one multipart part's headers.
MAX_PART_HEADER_BYTES = 4096
#: Most characters of one text field.
MAX_TEXT_CHARS = 65536

_NAMESPACE = "C3FDNS"
_ELEMENT = f"{{{_NAMESPACE}}}FaxDeliveryNotification"
_ACTION = "C3FDNS/FaxDeliveryNotification"
_IMAGE = "DeliveredImage"
# The text fields, in the vendor's order, and the attributes they fill.
_ATTRIBUTES = {
    "AccountId": "account_id",
    "ReferenceId": "reference_id",
    "FaxJobId": "job_id",
    "FaxJobStatusId": "status_id",
    "StatusDescription": "description",
    "PageCount": "page_count",
    "FaxDeliveryDateTime": "delivered_at",
    "FaxDeliveryDuration": "duration_seconds",
    "RemoteFaxCSID": "remote_csid",
    "ErrorCode": "error_code",
    "ErrorString": "error_string",
}
_NUMBERS = frozenset({"FaxJobStatusId", "PageCount", "FaxDeliveryDuration", "ErrorCode"})
_FIELDS = frozenset({*_ATTRIBUTES, _IMAGE})
_INT = re.compile(r"-?[0-9]{1,10}")
_BOUNDARY = re.compile(r"[0-9A-Za-z'()+_,./:=? -]{0,69}[0-9A-Za-z'()+_,./:=?-]")  # RFC 2046
_EXCERPT = 40


@dataclasses.dataclass(frozen=True, kw_only=True, repr=False)
class DeliveryNotification:
    """One completion push. ``status`` is derived from ``status_id`` (None for an id the vendor
    gives no meaning); ``delivered_at`` is timezone-aware; ``image`` is None when the push has
    none (an empty one counts as none). ``flavour`` says how it was encoded and is left out of
    comparisons: the same event in any flavour is equal. The repr gives the image's size only.
    """

    account_id: str = ""
    reference_id: str = ""
    job_id: str
    status_id: int
    status: JobStatus | None = dataclasses.field(init=False)
    description: str = ""
    page_count: int | None = None
    delivered_at: datetime | None = None
    duration_seconds: int | None = None
    remote_csid: str = ""
    error_code: int | None = None
    error_string: str = ""
    image: bytes | None = None
    flavour: Flavour = dataclasses.field(default="form", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", job_status(self.status_id))
        if self.image == b"":
            object.__setattr__(self, "image", None)

    @property
    def final(self) -> bool:
        """True when the job has ended (succeeded or failed)."""
        return self.status is not None and self.status.final

    def __repr__(self) -> str:
        names = [f.name for f in dataclasses.fields(self) if f.name != "image"]
        shown = [f"{name}={getattr(self, name)!r}" for name in names]
        shown.insert(-1, f"image=<{len(self.image)} bytes>" if self.image else "image=None")
        return f"DeliveryNotification({', '.join(shown)})"


class NotificationError(FaxWSError):
    """A push that cannot be read. ``field``: the field, header or part at fault (``body`` for
    the body as a whole); ``problem``: what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class NotificationAuthError(NotificationError):
    """The push does not carry the expected HTTP Basic credentials (``field`` is
    ``Authorization``); a receiver answers 401."""

    def __init__(self, problem: str) -> None:
        super().__init__("Authorization", problem)


class _Refused(Exception):  # noqa: N818 (turned into a NotificationError with the excerpt)
    def __init__(self, field: str, problem: str, shown: str | None = None) -> None:
        super().__init__(field)
        self.field, self.problem, self.shown = field, problem, shown


def _refuse(field: str, problem: str, shown: str | None = None) -> NoReturn:
    raise _Refused(field, problem, shown)


def _pairs(headers: _Headers) -> list[tuple[str, str]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(name.lower(), value) for name, value in items]


def _one(pairs: list[tuple[str, str]], name: str) -> str | None:
    values = [value for key, value in pairs if key == name.lower()]
    if len(values) > 1:
        _refuse(name, "is given more than once")
    return values[0] if values else None


def _expected(credentials: object) -> tuple[str, str]:
    match credentials:
        case tuple((str() as user, str() as password)) if ":" not in user:
            return user, password
    raise BadInputError("credentials", "must be (user, password), strings, the user without ':'")


def _same(given: bytes, expected: str) -> bool:
    # Digests of equal length: the comparison's time tells nothing, not even the length.
    want = hashlib.sha256(expected.encode("utf-8")).digest()
    return hmac.compare_digest(hashlib.sha256(given).digest(), want)


def check_credentials(headers: _Headers, credentials: tuple[str, str]) -> None:
    """Raise :class:`NotificationAuthError` unless the Authorization header holds
    ``credentials`` (user, password) as HTTP Basic credentials (UTF-8, RFC 7617)."""
    user, password = _expected(credentials)
    try:
        value = _one(_pairs(headers), "Authorization")
    except _Refused:
        raise NotificationAuthError("is given more than once") from None
    if value is None:
        raise NotificationAuthError("is missing")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic":
        raise NotificationAuthError("is not HTTP Basic")
    try:
        given = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise NotificationAuthError("is not valid base64") from None
    given_user, colon, given_password = given.partition(b":")
    same_user, same_password = _same(given_user, user), _same(given_password, password)
    if not (colon and same_user and same_password):
        raise NotificationAuthError("does not hold the expected user and password")


def parse_notification(
    body: bytes,
    headers: _Headers,
    *,
    credentials: tuple[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DeliveryNotification:
    """Read a completion push from its body and headers (see the module's rules)."""
    if not isinstance(body, bytes):
        raise BadInputError("body", "must be bytes")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise BadInputError("max_bytes", "must be a whole number of bytes, 0 or more")
    pairs = _pairs(headers)
    if credentials is not None:
        check_credentials(pairs, credentials)
    try:
        if len(body) > max_bytes:
            _refuse("body", f"is larger than {max_bytes} bytes")
        return _event(*_read(body, pairs))
    except _Refused as refused:
        problem = refused.problem
        if refused.shown is not None:  # masked before it is cut, room left for any spelling
            masked = _secrets(credentials) if credentials else []
            shown = redact(refused.shown[: _EXCERPT + 12 * len("".join(masked))], masked)
            problem += ": " + repr(shown[:_EXCERPT] + ("…" if len(shown) > _EXCERPT else ""))
        raise NotificationError(refused.field, problem) from None


def wsgi_app(
    on_final: Callable[[DeliveryNotification], object],
    credentials: tuple[str, str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> WSGIApp:
    """A WSGI application receiving pushes: each final event (the job delivered or failed) of
    a push carrying ``credentials`` (the jobs' NotifyAuthUser and NotifyAuthPassword) as HTTP
    Basic credentials is handed to ``on_final``. It answers

    - 405 to anything but a POST;
    - 401 when the credentials are missing or wrong, before the body is read;
    - 411 without a decimal Content-Length; 413 when that is over ``max_bytes`` (the body is
      not read);
    - 400 when the body is shorter than its Content-Length or cannot be read as a push (the
      text names the field and the problem, the password masked);
    - 500 when ``on_final`` raised (logged with the exception's type only): the service pushes
      again later, so an event is acknowledged only once it was handled;
    - 204 otherwise; an event of a job still in progress is acknowledged and dropped.
    """
    if not callable(on_final):
        raise BadInputError("on_final", "must be callable")
    expected = _expected(credentials)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise BadInputError("max_bytes", "must be a whole number of bytes, 0 or more")

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def answer(status: str, *headers: tuple[str, str], text: str = "") -> list[bytes]:
            body = text.encode("utf-8")
            if not status.startswith("204"):  # a 204 has no body, nor any length
                headers += (("Content-Length", str(len(body))),)
                if body:
                    headers += (("Content-Type", "text/plain; charset=utf-8"),)
            start_response(status, list(headers))
            return [body]

        if environ.get("REQUEST_METHOD") != "POST":
            return answer("405 Method Not Allowed", ("Allow", "POST"))
        # WSGI gives the request's headers as HTTP_* keys, and Content-Type apart.
        headers = [(k[5:].replace("_", "-"), v) for k, v in environ.items() if k[:5] == "HTTP_"]
        if environ.get("CONTENT_TYPE"):
            headers.append(("Content-Type", environ["CONTENT_TYPE"]))
        try:
            check_credentials(headers, expected)
        except NotificationAuthError:
            return answer("401 Unauthorized", ("WWW-Authenticate", 'Basic realm="faxws"'))
        length = environ.get("CONTENT_LENGTH") or ""
        if not (length.isascii() and length.isdigit()):
            return answer("411 Length Required")
        if int(length) > max_bytes:
            return answer("413 Content Too Large")
        body = environ["wsgi.input"].read(int(length))
        try:
            if len(body) < int(length):  # the sender went away: a cut form may still parse
                raise NotificationError("body", "is shorter than its Content-Length")
            event = parse_notification(body, headers, credentials=expected, max_bytes=max_bytes)
        except NotificationError as exc:
            return answer("400 Bad Request", text=str(exc))
        if event.final:
            try:
                on_final(event)
            except Exception as exc:  # any failure: the service pushes again
                from faxws._log import logger

                logger.warning("push for job %s not handled: %s", event.job_id, type(exc).__name__)
                return answer("500 Internal Server Error", text="the push could not be handled")
        return answer("204 No Content")

    return app


def _secrets(credentials: tuple[str, str]) -> list[str]:
    """The password, and the credentials as HTTP Basic carries them (base64 of user:password,
    padded or not, in either alphabet): a body may echo the Authorization header."""
    user, password = credentials
    basic = f"{user}:{password}".encode()
    tokens = {base64.b64encode(basic).decode("ascii"), base64.urlsafe_b64encode(basic).decode()}
    return [password, *tokens, *(token.rstrip("=") for token in tokens)]


def _read(body: bytes, pairs: list[tuple[str, str]]) -> tuple[dict[str, str | bytes], Flavour]:
    value = _one(pairs, "Content-Type")
    if value is None:
        _refuse("Content-Type", "is missing")
    parsed = email.message.Message()
    parsed["Content-Type"] = value
    kind = parsed.get_content_type()  # text/plain when it is not a media type at all
    if kind == "application/x-www-form-urlencoded":
        return _form(body), "form"
    if kind == "multipart/form-data":
        return _multipart(body, parsed.get_boundary()), "multipart"
    if kind in ("text/xml", "application/soap+xml"):
        action = _one(pairs, "SOAPAction") or parsed.get_param("action")
        if not isinstance(action, str) or action.strip().strip('"') != _ACTION:
            _refuse("SOAPAction", f"is not {_ACTION}", action if isinstance(action, str) else None)
        return _soap(body), "soap"
    _refuse("Content-Type", "is not a notification's (form, multipart or SOAP)", value)


def _put(fields: dict[str, str | bytes], name: str, value: str | bytes) -> None:
    if name in fields:
        _refuse(name, "is given more than once")
    if name != _IMAGE and len(value) > MAX_TEXT_CHARS:
        _refuse(name, f"is longer than {MAX_TEXT_CHARS} characters")
    fields[name] = value


def _utf8(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(name, "is not UTF-8 text")


def _form(body: bytes) -> dict[str, str | bytes]:
    if body.count(b"&") >= MAX_FIELDS:
        _refuse("body", f"has more than {MAX_FIELDS} fields")
    fields: dict[str, str | bytes] = {}
    for piece in body.split(b"&"):
        raw_name, _, raw_value = piece.partition(b"=")
        name = unquote_to_bytes(raw_name.replace(b"+", b" ")).decode("utf-8", "replace")
        if name in _FIELDS:
            _put(fields, name, _utf8(name, unquote_to_bytes(raw_value.replace(b"+", b" "))))
    return fields


def _multipart(body: bytes, boundary: str | None) -> dict[str, str | bytes]:
    if boundary is None or not _BOUNDARY.fullmatch(boundary):
        _refuse("Content-Type", "has no valid multipart boundary")
    # Counted and bounded before the parse: the parser keeps every part, and reading a
    # header's parameters takes time quadratic in its length.
    delimiter = b"--" + boundary.encode("ascii")
    at, count = body.find(delimiter), 0
    while at >= 0:
        count += 1
        if count > MAX_FIELDS + 1:
            _refuse("body", f"has more than {MAX_FIELDS} parts")
        start = at + len(delimiter)
        head = body[start : start + MAX_PART_HEADER_BYTES]
        ended = b"\n\n" in head or b"\n\r\n" in head or head.startswith(b"--")  # "--": the end
        if len(head) == MAX_PART_HEADER_BYTES and not ended:
            _refuse(f"part {count}", f"has headers over {MAX_PART_HEADER_BYTES} bytes")
        if not head.startswith(b"--") and _nested(head):
            _refuse(f"part {count}", "is itself multipart or a message (refused)")
        at = body.find(delimiter, start)
    parser = BytesFeedParser(policy=email.policy.compat32)
    parser.feed(b'Content-Type: multipart/form-data; boundary="%s"\r\n\r\n' % delimiter[2:])
    parser.feed(body)
    message = parser.close()
    if message.defects or not message.is_multipart():
        detail = f" ({type(message.defects[0]).__name__})" if message.defects else ""
        _refuse("body", f"is not a complete multipart body{detail}")
    fields: dict[str, str | bytes] = {}
    part: Any
    for number, part in enumerate(message.get_payload(), 1):
        payload = part.get_payload(decode=True)
        name = part.get_param("name", header="content-disposition")
        if part.defects or not isinstance(payload, bytes):
            _refuse(f"part {number}", "is not a complete form field")
        if part.get_content_disposition() != "form-data" or not isinstance(name, str):
            _refuse(f"part {number}", "has no form-data name")
        if name in _FIELDS:
            _put(fields, name, payload if name == _IMAGE else _utf8(name, payload))
    return fields


def _nested(head: bytes) -> bool:
    """Whether the part whose delimiter line ``head`` continues declares a multipart or message
    body, which the parser would read part by part, recursing once per level without bound.

    Its headers are read as the parser reads them, from the line after the delimiter's: they
    end within ``head`` (checked before). Where the parser stops them early, at the next
    delimiter, this reading may go on and find more headers, never fewer."""
    line = re.search(rb"\r\n|\r|\n", head)
    headers = HeaderParser(policy=email.policy.compat32).parsestr(
        head[line.end() if line else len(head) :].decode("ascii", "surrogateescape")
    )
    return headers.get_content_maintype() in ("multipart", "message")


def _soap(body: bytes) -> dict[str, str | bytes]:
    try:
        root = safexml.parse(body)
    except safexml.Unparsed as exc:
        dtd = exc.kind in ("doctype", "dtd")
        _refuse(
            "body", "has a DTD (refused)" if dtd else "is not well-formed XML", exc.detail or None
        )
    envelope = etree.QName(root)
    if envelope.localname != "Envelope" or envelope.namespace not in (SOAP11_NS, SOAP12_NS):
        _refuse("body", "is not a SOAP envelope")
    body_tag = f"{{{envelope.namespace}}}Body"
    items = [e for part in root if part.tag == body_tag for e in part if isinstance(e.tag, str)]
    if len(items) != 1 or items[0].tag != _ELEMENT:
        _refuse("body", "does not hold one FaxDeliveryNotification in a SOAP Body")
    fields: dict[str, str | bytes] = {}
    for child in items[0]:
        name = etree.QName(child) if isinstance(child.tag, str) else None
        if name and name.namespace in (None, _NAMESPACE) and name.localname in _FIELDS:
            if len(child):
                _refuse(name.localname, "holds elements, not text")
            _put(fields, name.localname, child.text or "")
    return fields


def _convert(name: str, raw: str) -> str | int | datetime | None:
    if name not in _NUMBERS and name != "FaxDeliveryDateTime":
        return raw
    value = raw.strip(" \t\r\n")
    if not value:
        return None
    if name in _NUMBERS:
        if _INT.fullmatch(value) and -(2**31) <= int(value) < 2**31:
            return int(value)
        _refuse(name, "is not a decimal integer from -2147483648 to 2147483647", value)
    at = parse_datetime(value)
    if at is not None:
        return at
    _refuse(name, "is not a date and time as YYYY-MM-DDTHH:MM:SS+HH:MM", value)


def _event(fields: dict[str, str | bytes], flavour: Flavour) -> DeliveryNotification:
    text = {name: value for name, value in fields.items() if isinstance(value, str)}
    image = fields.get(_IMAGE)
    if isinstance(image, str):
        try:
            image = base64.b64decode("".join(image.split()), validate=True)
        except (binascii.Error, ValueError):
            _refuse(_IMAGE, "is not valid base64")
    values = {attr: _convert(name, text.get(name, "")) for name, attr in _ATTRIBUTES.items()}
    if not values["job_id"]:
        _refuse("FaxJobId", "is missing")
    if values["status_id"] is None:
        _refuse("FaxJobStatusId", "is missing")
    return DeliveryNotification(**values, image=image, flavour=flavour)  # type: ignore[arg-type]


def render_notification(
    event: DeliveryNotification,
    flavour: str = "form",
    *,
    credentials: tuple[str, str] | None = None,
) -> tuple[dict[str, str], bytes]:
    """The headers and body with which the service pushes ``event``: ``form`` switches to
    ``multipart`` when the event has an image, as the service does. With ``credentials``
    (user, password) an HTTP Basic Authorization header is added."""
    if flavour not in ("form", "multipart", "soap"):
        raise BadInputError("flavour", "must be 'form', 'multipart' or 'soap'")
    values = {name: _text(getattr(event, attr)) for name, attr in _ATTRIBUTES.items()}
    headers: dict[str, str] = {}
    if credentials is not None:
        user, password = _expected(credentials)
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    try:
        if flavour == "soap":
            headers |= {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": f'"{_ACTION}"'}
            return headers, _soap_body(values, event.image)
        if flavour == "form" and event.image is None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            return headers, urlencode(list(values.items())).encode("ascii")
        parts = [(name, value.encode("utf-8")) for name, value in values.items()]
    except (UnicodeEncodeError, ValueError):
        raise BadInputError("event", f"has text the {flavour} flavour cannot carry") from None
    if event.image is not None:
        parts.append((_IMAGE, event.image))
    boundary = f"faxws-{secrets.token_hex(16)}"
    while any(boundary.encode("ascii") in data for _, data in parts):
        boundary = f"faxws-{secrets.token_hex(16)}"
    headers["Content-Type"] = f'multipart/form-data; boundary="{boundary}"'
    chunks = []
    for name, data in parts:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"'
        if name == _IMAGE:
            head += f'; filename="{_IMAGE}"\r\nContent-Type: application/octet-stream'
        else:
            head += "\r\nContent-Type: text/plain; charset=utf-8"
        chunks += [head.encode("ascii"), b"\r\n\r\n", data, b"\r\n"]
    chunks.append(f"--{boundary}--\r\n".encode("ascii"))
    return headers, b"".join(chunks)


def _text(value: object) -> str:
    if isinstance(value, datetime):
        offset = value.utcoffset()
        if offset is None or offset % timedelta(minutes=1):  # the format has +HH:MM
            raise BadInputError("delivered_at", "must be timezone-aware, offset in whole minutes")
        return format_datetime(value)
    if isinstance(value, int):
        return format(value, "d")  # an int subclass (an IntEnum on 3.10) as its digits
    return "" if value is None else str(value)


def _soap_body(values: dict[str, str], image: bytes | None) -> bytes:
    envelope = etree.Element(f"{{{SOAP11_NS}}}Envelope", nsmap={"soap": SOAP11_NS})
    body = etree.SubElement(envelope, f"{{{SOAP11_NS}}}Body")
    default = {None: _NAMESPACE}  # the stubs refuse the default namespace that lxml takes
    item = etree.SubElement(body, _ELEMENT, nsmap=default)  # type: ignore[arg-type]
    for name, value in values.items():
        etree.SubElement(item, f"{{{_NAMESPACE}}}{name}").text = value
    if image is not None:
        text = base64.b64encode(image).decode("ascii")
        etree.SubElement(item, f"{{{_NAMESPACE}}}{_IMAGE}").text = text
    return etree.tostring(envelope, xml_declaration=True, encoding="utf-8")
