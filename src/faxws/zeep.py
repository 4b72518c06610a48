"""zeep's own client for any FaxWS WSDL (:func:`make_client`; docs/zeep.md has the details):
zeep builds requests and deserializes successful answers, faxws does everything between, so
that faults, HTTP errors and non-zero ``WSError`` values are faxws errors before zeep sees
anything. This is the only module of faxws that imports zeep."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import zeep
import zeep.proxy
from lxml import etree

from faxws import _resources
from faxws._http.options import UNSET, ClientOptions, resolve
from faxws._http.shared import Response, Timeout, call_boundary
from faxws._http.sync_caller import SyncCaller
from faxws._protocol import safexml as _safexml
from faxws._protocol.checks import check_request_id, check_text
from faxws._protocol.payload_checks import check_payload
from faxws._protocol.reader import (
    ReadError,
    child_element,
    parse_document,
    payload_of,
    raise_for_ws_error,
    soap_payload,
)
from faxws._protocol.soap import SOAP11_NS, new_request_id
from faxws._protocol.writer import payload_envelope
from faxws._telemetry import traced
from faxws.auth import Credentials, credentials_from
from faxws.client import service_url
from faxws.errors import BadInputError, FaxWSError, ProtocolError, excerpt
from faxws.validation import XS_NS, Validator, default_validator

__all__ = ["IDEMPOTENT_PREFIXES", "FaxWSPlugin", "FaxWSTransport", "make_client"]

#: Operations whose names start with these only read, so they may be sent again after a
#: failure that may have followed delivery; no other one is re-sent once a byte may have left.
IDEMPOTENT_PREFIXES = ("Get", "Check", "SimpleGet")
#: The request elements the integration fills in.
_AUTH_FIELDS = ("UserID", "strPIN")
_REQUEST_ID = "x-ch-request-id"
_WSDL_NS = "http://schemas.xmlsoap.org/wsdl/"


class FaxWSPlugin(zeep.Plugin):
    """Fills ``UserID`` and ``strPIN`` of every request that has them: the PIN in PIN mode,
    an empty ``strPIN`` in OAuth 2.0 mode, whatever the caller passed."""

    def __init__(
        self,
        *,
        user_id: str,
        token: str | Callable[[], str] | None = None,
        pin: str | None = None,
    ) -> None:
        self.user_id = check_text("user_id", user_id, required=True)
        self.credentials: Credentials = credentials_from(token, pin)

    def __repr__(self) -> str:
        return f"FaxWSPlugin(user_id={self.user_id!r}, auth={self.credentials!r})"

    def egress(
        self, envelope: Any, http_headers: Any, operation: Any, binding_options: Any
    ) -> tuple[Any, Any]:
        payload = _payload(envelope)
        order = [name for name, _ in _elements(operation)]  # the request's children, in order
        for name, value in (("UserID", self.user_id), ("strPIN", self.credentials.pin())):
            if name in order:
                _set_child(payload, name, value, order)
        return envelope, http_headers


def _elements(operation: Any) -> list[tuple[str, Any]]:
    body = getattr(operation.input, "body", None)
    elements = getattr(getattr(body, "type", None), "elements", None)
    return list(elements) if elements is not None else []


def _payload(envelope: etree._Element) -> etree._Element:
    body = envelope.find(f"{{{SOAP11_NS}}}Body")
    children = [] if body is None else [c for c in body if isinstance(c.tag, str)]
    if len(children) != 1:
        raise BadInputError("request", f"the SOAP Body holds {len(children)} elements, not 1")
    return children[0]


def _set_child(payload: etree._Element, name: str, text: str, order: list[str]) -> None:
    """Set the child ``name`` of ``payload`` to ``text``, adding it in its schema place."""
    namespace = etree.QName(payload).namespace
    tag = f"{{{namespace}}}{name}" if namespace else name
    child = payload.find(tag)
    if child is None:
        rank = order.index(name)
        child = etree.Element(tag)
        for sibling in payload:
            local = etree.QName(sibling).localname if isinstance(sibling.tag, str) else None
            if local in order and order.index(local) > rank:
                sibling.addprevious(child)
                break
        else:
            payload.append(child)
    for extra in list(child):
        child.remove(extra)
    child.text = text


class FaxWSTransport(zeep.Transport):
    """A zeep transport that writes the contract's wire form, posts it to the service URL only,
    through the exchange of :class:`~faxws.FaxClient`, and reads the answer before zeep does.
    WSDL and XSD documents are read from local files only."""

    def __init__(self, caller: SyncCaller) -> None:
        session = requests.Session()
        session.trust_env = False
        super().__init__(session=session)  # type: ignore[no-untyped-call]
        self.caller = caller
        self.credentials = caller.credentials
        # request element -> (operation, soapAction, answer element), from the WSDL: only
        # payloads of its operations are sent, and only their answers reach zeep.
        self.operations: dict[str, tuple[str, str, str]] = {}
        self.validator: Validator | None = None

    def __repr__(self) -> str:
        return f"FaxWSTransport(url={self.caller.url!r}, auth={self.credentials!r})"

    def close(self) -> None:
        self.caller.close()
        self.session.close()

    def load(self, url: str) -> bytes:
        if urlsplit(url).scheme in ("http", "https"):
            raise BadInputError("wsdl", f"refers to {url}; only local files are read")
        data: bytes = super().load(url)  # type: ignore[no-untyped-call]
        return data

    def get(self, address: str, params: Any, headers: Any) -> Any:
        raise BadInputError("operation", "HTTP GET bindings are not part of the contract")

    def post_xml(self, address: str, envelope: etree._Element, headers: Any) -> Any:
        header = envelope.find(f"{{{SOAP11_NS}}}Header")
        if header is not None and len(header):
            raise BadInputError("_soapheaders", "SOAP headers are not part of the contract")
        return self._call(address, _payload(envelope), headers)

    def post(self, address: str, message: bytes | str, headers: Any) -> Any:
        """A serialized envelope: read back and written again in the contract's form."""
        data = message.encode() if isinstance(message, str) else message
        try:
            payload = soap_payload(parse_document(data))
        except ReadError as exc:
            raise BadInputError("message", exc.message) from None
        return self._call(address, payload, headers)

    def _call(self, address: str, payload: etree._Element, headers: Any) -> Any:
        given = _given(headers)
        rid = new_request_id() if given is None else check_request_id(given)
        _current.request_id = rid
        redact = _current.redact = _redactor(self.credentials, payload)
        return self._exchange(address, payload, headers, rid, redact)

    def _exchange(
        self,
        address: str,
        payload: etree._Element,
        headers: Any,
        rid: str,
        redact: Callable[[str], str],
    ) -> Any:
        with call_boundary(rid, redact):
            if address != self.caller.url:
                raise BadInputError(
                    "address", f"is {address!r}; this client posts only to {self.caller.url}"
                )
            known = self.operations.get(str(payload.tag))
            if known is None:
                raise BadInputError("message", f"{payload.tag} is no operation of this WSDL")
            name, soap_action, answer = known
            _refuse_extra_headers(headers, soap_action)
            # The contract's strPIN next to a Bearer token is present but empty: any text at
            # all, white space too, is something a service might read as a PIN.
            if self.credentials.mode != "pin" and any(
                len(pin) or pin.text for pin in payload.iter("{*}strPIN")
            ):
                raise BadInputError("strPIN", "a PIN is never sent next to a Bearer token")
            body = payload_envelope(payload)  # in memory: nothing is sent before the checks
            self._check(payload, redact)
            idempotent = name.startswith(IDEMPOTENT_PREFIXES)
            with traced(name, self.caller.url, rid) as span:
                raw = self.caller.call(
                    name, body, len(body), rid, soap_action, idempotent=idempotent
                )
                span.answered(lambda: redact(raw.headers.get("x-ch-activity-id", "")))
                answer_payload = payload_of(raw.status, raw.content, rid, redact)
                if answer_payload.tag != answer:
                    raise ProtocolError(
                        f"the answer to {name} is {answer_payload.tag}, not {answer}",
                        request_id=rid,
                        status_code=raw.status,
                    )
                if child_element(answer_payload, "WSError") is not None:
                    raise_for_ws_error(answer_payload, rid, raw.status, redact)
                # zeep turns values it cannot read into None and logs them (and whatever the
                # server wrote there) at ERROR: the answer must be valid for zeep to see it.
                if self.validator is not None:
                    issues = self.validator.schema_issues(answer_payload, max_issues=1)
                    if issues:
                        raise ProtocolError(
                            f"the answer is not valid against the WSDL's schema: "
                            f"{excerpt(redact(issues[0].path + ': ' + issues[0].message), 300)}",
                            request_id=rid,
                            status_code=raw.status,
                        )
                return _response(raw, self.caller.url)

    def _check(self, payload: etree._Element, redact: Callable[[str], str]) -> None:
        """Refuse, before any byte, a payload FaxClient would not send: the contract's schema
        for the contract's elements (the WSDL's own may be laxer: the vendor's lets
        Recipients be empty), the WSDL's for the others, and the clients' checks of the same
        values (faxws._protocol.payload_checks)."""
        contract = default_validator()
        qname = etree.QName(payload)
        in_contract = qname.namespace == contract.namespace and qname.localname in contract.elements
        try:
            check_payload(payload, contract if in_contract else self.validator)
        except BadInputError as exc:
            # An issue may quote a value the caller passed, a secret among them.
            issues = [replace(i, message=redact(i.message)) for i in exc.issues]
            raise BadInputError(exc.field, redact(exc.problem), issues=issues) from None


def _redactor(credentials: Credentials, payload: etree._Element) -> Callable[[str], str]:
    """The credentials' mask, and also of the NotifyAuthPassword the request carries
    (SendFaxEx's), as an answer or error may quote it."""
    passwords = [
        element.text
        for element in payload.iter()
        if isinstance(element.tag, str)
        and etree.QName(element).localname == "NotifyAuthPassword"
        and element.text
    ]
    if not passwords:
        return credentials.redact
    return lambda text: credentials.redact(text, *passwords)


#: The attributes of an error that may quote what the service sent (ids are left alone).
# The request id of this thread's call in progress, and the mask of what it quotes, for a
# failure zeep raises after it.
_current = threading.local()


class _OperationProxy(zeep.proxy.OperationProxy):
    """Everything a call raises is a faxws error: zeep's own failures are bad input before
    the request, and a ProtocolError (maybe delivered) after it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        client = self._proxy._client
        _current.request_id = _current.redact = None
        given = _given(client.settings.extra_http_headers or {})
        if given is not None:  # refused first, as FaxClient does, and never an error's id
            check_request_id(given)
        try:
            return super().__call__(*args, **kwargs)  # type: ignore[no-untyped-call]
        except FaxWSError as exc:
            if exc.request_id is None:  # refused before the call had its id (SOAP headers)
                exc.request_id = _request_id_of(client)
            raise
        except Exception as exc:
            rid: str | None = _current.request_id
            redact = _current.redact or client.transport.credentials.redact
            text = excerpt(redact(f"{type(exc).__name__}: {exc}"), 300)
            if rid is None:
                raise BadInputError("arguments", text, request_id=_request_id_of(client)) from None
            raise ProtocolError(f"zeep could not read the answer: {text}", request_id=rid) from None


def _request_id_of(client: Any) -> str | None:
    """The x-ch-request-id the caller set in the client's settings, or a fresh UUID4; None
    for one that cannot be sent (as FaxClient's errors: it could break a log line)."""
    given = _given(client.settings.extra_http_headers or {})
    if given is None:
        return new_request_id()
    try:
        return check_request_id(given)
    except BadInputError:
        return None


class _ServiceProxy(zeep.proxy.ServiceProxy):
    def __init__(self, client: Any, binding: Any, **binding_options: Any) -> None:
        super().__init__(client, binding, **binding_options)  # type: ignore[no-untyped-call]
        self._operations = {
            name: _OperationProxy(self, name)  # type: ignore[no-untyped-call]
            for name in self._binding.all()
        }


class _Client(zeep.Client):
    """A zeep.Client whose service proxies raise only faxws errors."""

    def bind(self, service_name: str | None = None, port_name: str | None = None) -> Any:
        proxy = super().bind(service_name, port_name)
        if proxy is None:
            return None
        return _ServiceProxy(self, proxy._binding, **proxy._binding_options)

    def create_service(self, binding_name: str, address: str) -> Any:
        proxy = super().create_service(binding_name, address)  # type: ignore[no-untyped-call]
        return _ServiceProxy(self, proxy._binding, **proxy._binding_options)


def _given(headers: Mapping[str, str]) -> str | None:
    """The x-ch-request-id among ``headers`` (any case), if there is one."""
    return next((v for k, v in headers.items() if k.lower() == _REQUEST_ID), None)


def _refuse_extra_headers(headers: Mapping[str, str], soap_action: str) -> None:
    """zeep sends its own SOAPAction and Content-Type, replaced by the contract's; a caller's
    extra header changing them, or any other one, is refused (only x-ch-request-id may be
    added)."""
    own = {"soapaction": f'"{soap_action}"', "content-type": "text/xml; charset=utf-8"}
    for key, value in headers.items():
        if key.lower() != _REQUEST_ID and own.get(key.lower()) != value:
            raise BadInputError(
                f"extra_http_headers[{key!r}]",
                "is not sent: requests carry exactly the contract's headers",
            )


def _response(raw: Response, url: str) -> requests.Response:
    """The answer as zeep expects it (a requests.Response), from the bytes already read."""
    response = requests.Response()
    response.status_code = raw.status
    response.headers = requests.structures.CaseInsensitiveDict(raw.headers)
    response._content = raw.content
    response.encoding = "utf-8"
    response.url = url
    return response


def make_client(
    base_url: str,
    *,
    user_id: str,
    token: str | Callable[[], str] | None = None,
    pin: str | None = None,
    wsdl: str | os.PathLike[str] | None = None,
    options: ClientOptions | None = None,
    timeout: Timeout = UNSET,
    verify: bool | str = UNSET,
    proxies: Mapping[str, str] | None = UNSET,
    allow_insecure_http: bool = UNSET,
    retries: int = UNSET,
    retry_backoff: float = UNSET,
    max_connections: int | None = UNSET,
    max_response_bytes: int = UNSET,
) -> zeep.Client:
    """A ``zeep.Client`` for a FaxWS WSDL (the packaged one by default, or a local file such
    as the vendor's), posting to ``{base_url}/fax/v5`` in the contract's wire form. The other
    arguments are those of :class:`faxws.FaxClient`, checked the same way; only operations
    in :data:`IDEMPOTENT_PREFIXES` are retried once a byte may have been delivered."""
    checked = resolve(
        options,
        timeout=timeout,
        verify=verify,
        proxies=proxies,
        allow_insecure_http=allow_insecure_http,
        retries=retries,
        retry_backoff=retry_backoff,
        max_connections=max_connections,
        max_response_bytes=max_response_bytes,
    )
    plugin = FaxWSPlugin(user_id=user_id, token=token, pin=pin)
    url = service_url(base_url, allow_insecure_http=checked.allow_insecure_http)
    caller = SyncCaller(url, plugin.credentials, checked)
    transport = FaxWSTransport(caller)
    settings = zeep.Settings(
        strict=True, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    with _wsdl_file(wsdl) as path:
        try:
            client = _Client(  # type: ignore[no-untyped-call]
                str(path), transport=transport, plugins=[plugin], settings=settings
            )
        except BadInputError:
            raise
        except Exception as exc:
            raise BadInputError("wsdl", f"cannot be loaded ({type(exc).__name__})") from None
        transport.validator = _schema_validator(path)
    for service in client.wsdl.services.values():
        for port in service.ports.values():
            port.binding_options["address"] = caller.url
    for binding in client.wsdl.bindings.values():
        for operation in binding.all().values():  # type: ignore[no-untyped-call]
            request, answer = operation.input.body, operation.output.body
            if request is not None and answer is not None:
                transport.operations[str(request.qname)] = (
                    operation.name,
                    operation.soapaction or "",
                    str(answer.qname),
                )
            # Optional in this client's copy of the schema: zeep serializes a request
            # without them, and the plugin fills them in.
            for name, element in _elements(operation):
                if name in _AUTH_FIELDS:
                    element.min_occurs = 0
    return client


def _schema_validator(wsdl_path: Path) -> Validator:
    """The WSDL's own schema (its first xs:schema), for checking answers before zeep."""
    root = etree.parse(str(wsdl_path), _safexml.parser()).getroot()
    schema = root.find(f"{{{_WSDL_NS}}}types/{{{XS_NS}}}schema")
    if schema is None:
        raise BadInputError("wsdl", "has no xs:schema in wsdl:types")
    return Validator(etree.tostring(schema), base_url=wsdl_path.resolve().as_uri())


@contextlib.contextmanager
def _wsdl_file(wsdl: str | os.PathLike[str] | None) -> Iterator[Path]:
    """The WSDL's local path: the given one (checked), or the packaged one."""
    if wsdl is None:
        with _resources.wsdl_path() as packaged:
            yield packaged
        return
    if not isinstance(wsdl, (str, os.PathLike)):
        raise BadInputError("wsdl", f"must be a path, not {type(wsdl).__name__}")
    text = str(os.fspath(wsdl))
    if urlsplit(text).scheme in ("http", "https"):
        raise BadInputError("wsdl", "must be a local file, not a URL")
    path = Path(text).expanduser()
    if not path.is_file():
        raise BadInputError("wsdl", f"no file at {text!r}")
    yield path.resolve()
