"""The FaxWS clients: typed calls over the exact wire form, synchronous (:class:`FaxClient`)
and for asyncio (:class:`AsyncFaxClient`), sharing everything but the exchange itself."""

from __future__ import annotations

import asyncio
import math
import operator
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import urlsplit

from faxws._http.options import UNSET, ClientOptions, resolve
from faxws._http.shared import Response, Timeout, call_boundary
from faxws._http.sync_caller import SyncCaller
from faxws._log import logger
from faxws._protocol import assumptions as vendor
from faxws._protocol.checks import (
    check_distinct_indexes,
    check_int,
    check_recipient,
    check_request_id,
    check_text,
    is_loopback,
)
from faxws._protocol.content import Source
from faxws._protocol.reader import interpret
from faxws._protocol.soap import PATH, new_request_id
from faxws._protocol.waiting import Waiting
from faxws._protocol.writer import Body, as_values, envelope
from faxws._protocol.xsd import Operation
from faxws._telemetry import traced
from faxws.auth import Credentials, Token, credentials_from
from faxws.bindings import (
    CANCEL_FAX,
    GET_FAX_BROADCAST_REPORT,
    GET_FAX_STATUS,
    GET_REAL_TIME_FAX_STATUS_EX2,
    SEND_FAX,
    SEND_FAX_EX,
    SIMPLE_GET_FAX_STATUS,
    CancelFax,
    FaxJobFiles,
    FaxJobId,
    FaxJobIds,
    FaxJobRecipients,
    FaxSendExResponse,
    FaxSendResponse,
    GetFaxBroadcastReport,
    GetFaxStatus,
    GetRealTimeFaxStatusEx2,
    SendFax,
    SendFaxEx,
    SimpleGetFaxStatus,
)
from faxws.errors import (
    BadInputError,
    FaxWSError,
    ProtocolError,
    ServiceError,
    WaitTimeoutError,
    excerpt,
)
from faxws.jobs import JobOptions, job_details
from faxws.models import (
    BroadcastReportResult,
    FaxFile,
    Recipient,
    SendFaxResult,
)
from faxws.status import (
    CancelResult,
    FaxStatus,
    RealTimeFaxStatus,
    ReferenceStatus,
    _fax_status,
    _real_time_status,
    job_status,
)

if TYPE_CHECKING:
    from faxws._http.async_caller import AsyncCaller

__all__ = ["AsyncFaxClient", "FaxClient"]

SendResponse = FaxSendResponse | FaxSendExResponse
RequestT = TypeVar("RequestT")
IdsRequestT = TypeVar("IdsRequestT", GetFaxStatus, GetRealTimeFaxStatusEx2)
ResponseT = TypeVar("ResponseT")


def service_url(base_url: str, *, allow_insecure_http: bool = False) -> str:
    """``{base_url}/fax/v5``, after checking that ``base_url`` is a plain service root."""
    if not isinstance(base_url, str):
        raise BadInputError("base_url", f"must be a str, not {type(base_url).__name__}")
    if any(c.isspace() or ord(c) < 0x20 for c in base_url):
        raise BadInputError("base_url", "must not contain whitespace or control characters")
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        # Not quoted: the parser's text repeats what it could not read, which may be a
        # secret put where the port goes (https://id:secret/...).
        raise BadInputError("base_url", "is not a valid URL (its port or IPv6 address)") from None
    if parts.scheme not in ("http", "https"):
        raise BadInputError(
            "base_url", f"scheme must be http or https, not {parts.scheme or '(none)'!r}"
        )
    if not parts.hostname:
        raise BadInputError("base_url", "has no host")
    if "@" in parts.netloc:
        raise BadInputError("base_url", "must not contain user information (user@host)")
    if "?" in base_url or parts.query:
        raise BadInputError("base_url", "must not contain a query (?...)")
    if "#" in base_url or parts.fragment:
        raise BadInputError("base_url", "must not contain a fragment (#...)")
    if parts.scheme == "http" and not allow_insecure_http and not is_loopback(parts.hostname):
        raise BadInputError(
            "base_url",
            f"plain http to {parts.hostname} would expose the credentials; use https "
            "(or pass allow_insecure_http=True)",
        )
    path = parts.path.rstrip("/")
    if not path.endswith(PATH):
        path += PATH
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if port is not None:
        netloc += f":{port}"
    return f"{parts.scheme}://{netloc}{path}"


TokenT = TypeVar("TokenT", bound=Token)


class _ClientBase(Generic[TokenT]):
    """What both clients do around the exchange, with no I/O: options and arguments checked,
    requests built, answers read. Each face adds its exchange (its caller) and ``token`` type."""

    _asynchronous = False

    def __init__(
        self,
        base_url: str,
        *,
        user_id: str,
        token: TokenT | None = None,
        pin: str | None = None,
        options: ClientOptions | None = None,
        timeout: Timeout = UNSET,
        verify: bool | str = UNSET,
        proxies: Mapping[str, str] | None = UNSET,
        allow_insecure_http: bool = UNSET,
        retries: int = UNSET,
        retry_backoff: float = UNSET,
        max_connections: int | None = UNSET,
        max_response_bytes: int = UNSET,
    ) -> None:
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
        self._user_id = check_text("user_id", user_id, required=True)
        self._auth: Credentials = credentials_from(token, pin, asynchronous=self._asynchronous)
        self._url = service_url(base_url, allow_insecure_http=checked.allow_insecure_http)
        self._options = checked
        self._caller = self._connect(checked)

    @abstractmethod
    def _connect(self, options: ClientOptions) -> Any: ...

    @property
    def url(self) -> str:
        """The endpoint every request is posted to."""
        return self._url

    @property
    def options(self) -> ClientOptions:
        """The client's options, checked, however they were given."""
        return self._options

    @property
    def user_id(self) -> str:
        return self._user_id

    @property
    def auth_mode(self) -> str:
        """``"oauth2"`` or ``"pin"``."""
        return self._auth.mode

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(url={self._url!r}, user_id={self._user_id!r}, auth={self._auth!r})"

    def _send_fax_request(
        self,
        recipients: Sequence[Recipient | str],
        files: Sequence[FaxFile],
        options: JobOptions | None,
    ) -> tuple[Operation[Any, Any], SendFax | SendFaxEx, int, str | None]:
        """The operation and request, how many recipients it names, and its ReferenceId."""
        # Recipients and files in the writer's tuple form: no object made for each of a
        # thousand recipients (the values were checked as the models were made).
        rows = _recipients(recipients)
        named = as_values(FaxJobRecipients, (rows,))
        jobs = as_values(FaxJobFiles, (_files(files),))
        if options is None:
            return SEND_FAX, SendFax(self._user_id, self._auth.pin(), named, jobs), len(rows), None
        if not isinstance(options, JobOptions):
            raise BadInputError("options", f"must be a JobOptions, not {type(options).__name__}")
        reference = options.reference_id or vendor.new_reference_id()
        details = job_details(options, reference, datetime.now(timezone.utc))
        request = SendFaxEx(self._user_id, self._auth.pin(), named, jobs, details)
        return SEND_FAX_EX, request, len(rows), reference

    def _job_ids(
        self, job_ids: Sequence[str], batch_size: int, request_id: str | None
    ) -> list[list[str]]:
        """Distinct job ids, in the order given, in calls of at most ``batch_size``."""
        if isinstance(job_ids, (str, bytes)) or not isinstance(job_ids, Sequence):
            raise BadInputError("job_ids", "must be a list of job ids")
        if not job_ids:
            raise BadInputError("job_ids", "must hold at least one job id")
        for i, job_id in enumerate(job_ids):
            check_text(f"job_ids[{i}]", job_id, required=True)
        size = check_int("batch_size", batch_size, 1, 10_000)
        ids = list(dict.fromkeys(job_ids))
        batches = [ids[i : i + size] for i in range(0, len(ids), size)]
        if request_id is not None and len(batches) > 1:
            raise BadInputError(
                "request_id", f"names one call; {len(ids)} job ids make {len(batches)} calls"
            )
        return batches

    def _ids_request(self, cls: type[IdsRequestT], job_ids: list[str]) -> IdsRequestT:
        """A status request (GetFaxStatus or its real-time twin: the same elements)."""
        return cls(self._user_id, self._auth.pin(), FaxJobIds(tuple(map(FaxJobId, job_ids))))

    def _reference_request(self, reference_id: str) -> SimpleGetFaxStatus:
        check_text("reference_id", reference_id, required=True)
        job = vendor.REFERENCE_PREFIX + reference_id
        return SimpleGetFaxStatus(self._user_id, self._auth.pin(), job)

    def _cancel_request(self, job_id: str) -> CancelFax:
        return CancelFax(
            self._user_id, self._auth.pin(), check_text("job_id", job_id, required=True)
        )

    def _waiting(
        self, jobs: SendFaxResult | Sequence[str], timeout: float, batch_size: int
    ) -> Waiting[RealTimeFaxStatus]:
        first = 0.0
        if isinstance(jobs, SendFaxResult):
            first = float(max(jobs.ttfp, 0))
            jobs = jobs.job_ids
        try:
            seconds = float(timeout) if isinstance(timeout, (int, float)) else math.nan
        except OverflowError:  # an int beyond float's range
            seconds = math.nan
        if isinstance(timeout, bool) or not math.isfinite(seconds) or seconds <= 0:
            raise BadInputError("timeout", "must be a finite number of seconds above 0")
        ids = self._job_ids(jobs, batch_size, None)
        return Waiting(
            [i for batch in ids for i in batch],
            timeout=seconds,
            first=first,
            batch_size=batch_size,
            clock=time.monotonic,
        )

    def _report_request(
        self, job_id: str, recipient_type: int | None, recip_address: str | None
    ) -> GetFaxBroadcastReport:
        check_text("job_id", job_id, required=True)
        if (recipient_type is None) != (recip_address is None):
            raise BadInputError(
                "recipient_type/recip_address", "give both to narrow the report, or neither"
            )
        rtype = 0 if recipient_type is None else check_int("recipient_type", recipient_type)
        address = (
            ""
            if recip_address is None
            else check_text("recip_address", recip_address, required=True)
        )
        return GetFaxBroadcastReport(
            user_id=self._user_id,
            str_pin=self._auth.pin(),
            job_id=job_id,
            recipient_type=rtype,
            recip_address=address,
        )

    @staticmethod
    def _body(request: object, rid: str) -> Body:
        # Not parsed back for a schema check: strings are checked on the way in and the writer
        # refuses the rest as the schema would (tests/protocol/test_equivalence.py proves it).
        try:
            return envelope(request)
        except BadInputError as exc:
            exc.request_id = rid
            raise

    def _boundary(self, rid: str, secret: str = "") -> call_boundary:
        """The boundary of a call: what leaves it is masked with :meth:`_redactor`."""
        return call_boundary(rid, self._redactor(secret))

    def _redactor(self, secret: str) -> Callable[[str], str]:
        """The mask of what a call's answer or error quotes: the client's secrets and the
        notification password the call carries."""
        if not secret:
            return self._auth.redact
        return lambda text: self._auth.redact(text, secret)

    def _read(
        self, operation: Operation[Any, ResponseT], raw: Response, rid: str, secret: str = ""
    ) -> ResponseT:
        return interpret(operation, raw.status, raw.content, rid, self._redactor(secret))

    def _traced(self, raw: Response, secret: str = "") -> dict[str, Any]:
        """A result's fields from the answer's tracing headers, any echoed secret masked."""
        activity = raw.headers.get("x-ch-activity-id")
        try:
            elapsed: int | None = int(raw.headers.get("x-ch-execution-time", "").strip())
        except ValueError:
            elapsed = None
        return {
            "activity_id": None if activity is None else self._redactor(secret)(activity),
            "execution_time_ms": elapsed,
        }

    def _send_fax_result(
        self,
        rid: str,
        sent: int,
        response: SendResponse,
        raw: Response,
        reference: str | None,
        secret: str,
    ) -> SendFaxResult:
        """``sent``: how many recipients the request named."""
        job_ids = tuple(item.job_id for item in response.fax_job_ids.item)
        if len(job_ids) != sent:
            # Not an error: the job was accepted, and raising would invite a second send.
            logger.warning(
                "SendFax request_id=%s: %d job ids for %d recipients",
                rid,
                len(job_ids),
                sent,
            )
        return SendFaxResult(
            job_ids=job_ids,
            ttfp=response.ttfp,
            request_id=rid,
            reference_id=reference,
            **self._traced(raw, secret),
        )

    def _reference_result(self, reference_id: str, value: int, rid: str) -> ReferenceStatus:
        if value == vendor.JOB_NOT_FOUND:
            return ReferenceStatus(reference_id, False, value, None)
        if value < 0:
            raise ServiceError(value, "SimpleGetFaxStatus answered an error code", request_id=rid)
        return ReferenceStatus(reference_id, True, value, job_status(value))

    def _report_result(
        self, rid: str, request: GetFaxBroadcastReport, raw: Response
    ) -> BroadcastReportResult:
        return BroadcastReportResult(
            job_id=request.job_id,
            request_id=rid,
            recipient_type=request.recipient_type,
            recip_address=request.recip_address,
            **self._traced(raw),
        )


class FaxClient(_ClientBase[str | Callable[[], str]]):
    """A client of the FaxWS v5 service, safe to share between threads; use it as a context
    manager, or call :meth:`close`, to release its pooled connections.

    Args:
        base_url: the service root, e.g. ``https://fax.example.com``; requests go to
            ``{base_url}/fax/v5`` (a base URL already ending in ``/fax/v5`` is kept).
        user_id: the account, e.g. ``mbx1234567890``.
        token: OAuth 2.0 access token, or a zero-argument callable returning one (called for
            each request); or, instead, ``pin``: the PIN or password.
        options: a :class:`~faxws.ClientOptions` (time-outs, TLS, proxies, retries, connections,
            the largest answer, the transport), or its fields given one by one as keyword
            arguments (``timeout``, ``verify``, ...); giving a field both ways is refused.
    """

    _caller: SyncCaller

    def _connect(self, options: ClientOptions) -> SyncCaller:
        return SyncCaller(self._url, self._auth, options)

    def close(self) -> None:
        """Close the idle pooled connections (a call in flight in another thread finishes,
        and its connection is closed then). A call made afterwards opens new ones."""
        self._caller.close()

    def __enter__(self) -> FaxClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send_fax(
        self,
        recipients: Sequence[Recipient | str],
        files: Sequence[FaxFile],
        request_id: str | None = None,
        *,
        options: JobOptions | None = None,
    ) -> SendFaxResult:
        """Submit a fax job: every file to every recipient; as SendFaxEx with ``options``
        (schedule, sender, cover, notification; always a ReferenceId, made when not given),
        else as SendFax. Never sent again automatically once any byte may have reached the
        service (an error then carries the ``reference_id`` to look the job up by); a bad
        argument raises BadInputError before anything is sent (every error:
        :mod:`faxws.errors`)."""
        rid = _request_id(request_id)
        reference = None
        secret = _notify_secret(options)
        try:
            with self._boundary(rid, secret):
                operation, request, named, reference = self._send_fax_request(
                    recipients, files, options
                )
                response, raw = self._call(operation, request, rid, idempotent=False, secret=secret)
                return self._send_fax_result(rid, named, response, raw, reference, secret)
        except FaxWSError as exc:
            exc.reference_id = reference
            raise

    def get_fax_status(
        self,
        job_ids: Sequence[str],
        *,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        request_id: str | None = None,
    ) -> list[FaxStatus]:
        """The status of each job (GetFaxStatus), as many ids per call as ``batch_size``;
        retried as any idempotent call. Each status carries its own error (an unknown id:
        ``error_code`` -5019)."""
        statuses: list[FaxStatus] = []
        for batch in self._job_ids(job_ids, batch_size, request_id):
            rid = _request_id(request_id)
            with self._boundary(rid):
                request = self._ids_request(GetFaxStatus, batch)
                response, _ = self._call(GET_FAX_STATUS, request, rid, idempotent=True)
                statuses += _aligned(
                    batch, map(_fax_status, response.fax_status_list.item), rid, self._auth.redact
                )
        return statuses

    def get_real_time_fax_status(
        self,
        job_ids: Sequence[str],
        *,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        request_id: str | None = None,
    ) -> list[RealTimeFaxStatus]:
        """The status of each job with its delivery progress (pages sent of total, delivery
        time, call duration, remote CSID, ReferenceId), by GetRealTimeFaxStatusEx2; as
        :meth:`get_fax_status`."""
        statuses: list[RealTimeFaxStatus] = []
        for batch in self._job_ids(job_ids, batch_size, request_id):
            rid = _request_id(request_id)
            with self._boundary(rid):
                statuses += self._real_time_batch(batch, rid)
        return statuses

    def _real_time_batch(self, batch: list[str], rid: str) -> list[RealTimeFaxStatus]:
        request = self._ids_request(GetRealTimeFaxStatusEx2, batch)
        response, _ = self._call(GET_REAL_TIME_FAX_STATUS_EX2, request, rid, idempotent=True)
        return _aligned(
            batch, map(_real_time_status, response.fax_status_list.item), rid, self._auth.redact
        )

    def get_status_by_reference(
        self, reference_id: str, *, request_id: str | None = None
    ) -> ReferenceStatus:
        """The status SimpleGetFaxStatus gives for ``JRI-<reference_id>``. ``found`` False
        right after a lost answer does not prove that nothing was sent (the vendor does not say
        how soon a job becomes visible)."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._reference_request(reference_id)
            response, _ = self._call(SIMPLE_GET_FAX_STATUS, request, rid, idempotent=True)
            return self._reference_result(reference_id, response.return_, rid)

    def cancel_fax(self, job_id: str, *, request_id: str | None = None) -> CancelResult:
        """Ask the service to cancel a job that has not ended; never sent again automatically
        once a byte may have reached it. A job that ended, or an unknown one, is a
        ServiceError."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._cancel_request(job_id)
            _, raw = self._call(CANCEL_FAX, request, rid, idempotent=False)
            return CancelResult(request.job_id, rid, self._traced(raw)["activity_id"])

    def wait_for_delivery(
        self,
        jobs: SendFaxResult | Sequence[str],
        *,
        timeout: float,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        on_progress: Callable[[list[RealTimeFaxStatus]], object] | None = None,
    ) -> list[RealTimeFaxStatus]:
        """Poll until every job has ended and give their final statuses (succeeded or failed:
        check each one). The first poll after the send's TTFP (given a SendFaxResult), then
        intervals doubling up to a minute, with jitter; ``batch_size`` ids per call. Raises
        WaitTimeoutError, carrying the last statuses seen, once ``timeout`` seconds have passed
        (no poll starts after that; one under way then ends within the client's time-outs).
        ``on_progress``, if given, gets every status seen so far after each round of polls."""
        waiting = self._waiting(jobs, timeout, batch_size)
        rid = ""
        while (delay := waiting.next_delay()) is not None:
            time.sleep(delay)
            for n, batch in enumerate(waiting.batches()):
                if n and waiting.left() <= 0:  # the round's first poll may be at the deadline
                    break
                rid = _request_id(None)
                with self._boundary(rid):
                    waiting.record(self._real_time_batch(batch, rid))
            if on_progress is not None:
                on_progress(waiting.results())
            if waiting.done:
                return waiting.results()
        raise _timed_out(waiting, timeout, rid)

    def get_fax_broadcast_report(
        self,
        job_id: str,
        recipient_type: int | None = None,
        recip_address: str | None = None,
        request_id: str | None = None,
    ) -> BroadcastReportResult:
        """Ask for the broadcast report of a job, optionally narrowed to one recipient:
        ``recipient_type`` and ``recip_address`` go together; with neither, ``RecipientType``
        0 and an empty ``RecipAddress`` are sent (an assumption: the interface does not say
        how to ask for the whole job). An unknown job id is a ServiceError (code -5019)."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._report_request(job_id, recipient_type, recip_address)
            _, raw = self._call(GET_FAX_BROADCAST_REPORT, request, rid, idempotent=True)
            return self._report_result(rid, request, raw)

    def _call(
        self,
        operation: Operation[RequestT, ResponseT],
        request: RequestT,
        rid: str,
        *,
        idempotent: bool,
        secret: str = "",
    ) -> tuple[ResponseT, Response]:
        body = self._body(request, rid)
        whole = body.whole  # nothing to open: small documents in memory are encoded already
        with ExitStack() as opened, traced(operation.name, self._url, rid) as span:
            # Documents are measured now: Content-Length is what they hold at this moment.
            payload = whole if whole is not None else opened.enter_context(body.open()).payload()
            raw = self._caller.call(
                operation.name,
                payload,
                len(payload),
                rid,
                operation.soap_action,
                idempotent=idempotent,
            )
            span.answered(lambda: self._traced(raw, secret)["activity_id"])
            return self._read(operation, raw, rid, secret), raw


class AsyncFaxClient(_ClientBase[Token]):
    """The FaxWS v5 client for asyncio: the options, methods, results and errors of
    :class:`FaxClient`, with coroutines for the calls. Use it with ``async with``, or await
    :meth:`close`; its connections belong to the event loop it is first used in. Needs the
    ``async`` extra (aiohttp, imported when the first client is made).

    ``token`` may also be an async callable, awaited for every request; a plain callable is
    called in the event loop, so it must not block. A call cancelled while its request is in
    flight logs (WARNING) its request id and whether the request may have been delivered,
    closes the connection it used, and re-raises :class:`asyncio.CancelledError`; a call
    that :meth:`close` ends is not cancelled, and raises a :class:`~faxws.FaxWSError`.
    """

    _asynchronous = True
    _caller: AsyncCaller

    def _connect(self, options: ClientOptions) -> AsyncCaller:
        from faxws._http.async_caller import AsyncCaller  # imports aiohttp: only when it is used

        return AsyncCaller(self._url, self._auth, options)

    async def close(self) -> None:
        """Close the connections, ending every call in flight: each raises
        :class:`~faxws.ConnectError` or :class:`~faxws.TransportError` (by whether any byte
        was written) saying the client was closed, is not tried again and opens no
        connection. A call made after close() has returned opens new ones."""
        await self._caller.close()

    async def __aenter__(self) -> AsyncFaxClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def send_fax(
        self,
        recipients: Sequence[Recipient | str],
        files: Sequence[FaxFile],
        request_id: str | None = None,
        *,
        options: JobOptions | None = None,
    ) -> SendFaxResult:
        """Submit a fax job: every file to every recipient (see :meth:`FaxClient.send_fax`)."""
        rid = _request_id(request_id)
        reference = None
        secret = _notify_secret(options)
        try:
            with self._boundary(rid, secret):
                operation, request, named, reference = self._send_fax_request(
                    recipients, files, options
                )
                response, raw = await self._call(
                    operation, request, rid, idempotent=False, secret=secret
                )
                return self._send_fax_result(rid, named, response, raw, reference, secret)
        except FaxWSError as exc:
            exc.reference_id = reference
            raise
        except asyncio.CancelledError:
            if reference is not None:  # the caller's only way to look the job up
                logger.warning(
                    "SendFaxEx request_id=%s cancelled: look it up by its reference id %s "
                    "before sending it again",
                    rid,
                    reference,
                )
            raise

    async def get_fax_status(
        self,
        job_ids: Sequence[str],
        *,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        request_id: str | None = None,
    ) -> list[FaxStatus]:
        """The status of each job (see :meth:`FaxClient.get_fax_status`)."""
        statuses: list[FaxStatus] = []
        for batch in self._job_ids(job_ids, batch_size, request_id):
            rid = _request_id(request_id)
            with self._boundary(rid):
                request = self._ids_request(GetFaxStatus, batch)
                response, _ = await self._call(GET_FAX_STATUS, request, rid, idempotent=True)
                statuses += _aligned(
                    batch, map(_fax_status, response.fax_status_list.item), rid, self._auth.redact
                )
        return statuses

    async def get_real_time_fax_status(
        self,
        job_ids: Sequence[str],
        *,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        request_id: str | None = None,
    ) -> list[RealTimeFaxStatus]:
        """Each job's status with its progress (see
        :meth:`FaxClient.get_real_time_fax_status`)."""
        statuses: list[RealTimeFaxStatus] = []
        for batch in self._job_ids(job_ids, batch_size, request_id):
            rid = _request_id(request_id)
            with self._boundary(rid):
                statuses += await self._real_time_batch(batch, rid)
        return statuses

    async def _real_time_batch(self, batch: list[str], rid: str) -> list[RealTimeFaxStatus]:
        request = self._ids_request(GetRealTimeFaxStatusEx2, batch)
        response, _ = await self._call(GET_REAL_TIME_FAX_STATUS_EX2, request, rid, idempotent=True)
        return _aligned(
            batch, map(_real_time_status, response.fax_status_list.item), rid, self._auth.redact
        )

    async def get_status_by_reference(
        self, reference_id: str, *, request_id: str | None = None
    ) -> ReferenceStatus:
        """The status for ``JRI-<reference_id>`` (see
        :meth:`FaxClient.get_status_by_reference`)."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._reference_request(reference_id)
            response, _ = await self._call(SIMPLE_GET_FAX_STATUS, request, rid, idempotent=True)
            return self._reference_result(reference_id, response.return_, rid)

    async def cancel_fax(self, job_id: str, *, request_id: str | None = None) -> CancelResult:
        """Ask to cancel a job (see :meth:`FaxClient.cancel_fax`)."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._cancel_request(job_id)
            _, raw = await self._call(CANCEL_FAX, request, rid, idempotent=False)
            return CancelResult(request.job_id, rid, self._traced(raw)["activity_id"])

    async def wait_for_delivery(
        self,
        jobs: SendFaxResult | Sequence[str],
        *,
        timeout: float,
        batch_size: int = vendor.STATUS_BATCH_SIZE,
        on_progress: Callable[[list[RealTimeFaxStatus]], object] | None = None,
    ) -> list[RealTimeFaxStatus]:
        """Poll until every job has ended (see :meth:`FaxClient.wait_for_delivery`)."""
        waiting = self._waiting(jobs, timeout, batch_size)
        rid = ""
        while (delay := waiting.next_delay()) is not None:
            await asyncio.sleep(delay)
            for n, batch in enumerate(waiting.batches()):
                if n and waiting.left() <= 0:  # the round's first poll may be at the deadline
                    break
                rid = _request_id(None)
                with self._boundary(rid):
                    waiting.record(await self._real_time_batch(batch, rid))
            if on_progress is not None:
                on_progress(waiting.results())
            if waiting.done:
                return waiting.results()
        raise _timed_out(waiting, timeout, rid)

    async def get_fax_broadcast_report(
        self,
        job_id: str,
        recipient_type: int | None = None,
        recip_address: str | None = None,
        request_id: str | None = None,
    ) -> BroadcastReportResult:
        """Ask for the broadcast report of a job (see
        :meth:`FaxClient.get_fax_broadcast_report`)."""
        rid = _request_id(request_id)
        with self._boundary(rid):
            request = self._report_request(job_id, recipient_type, recip_address)
            _, raw = await self._call(GET_FAX_BROADCAST_REPORT, request, rid, idempotent=True)
            return self._report_result(rid, request, raw)

    async def _call(
        self,
        operation: Operation[RequestT, ResponseT],
        request: RequestT,
        rid: str,
        *,
        idempotent: bool,
        secret: str = "",
    ) -> tuple[ResponseT, Response]:
        body = self._body(request, rid)
        with traced(operation.name, self._url, rid) as span:
            raw = await self._caller.call(
                operation.name, body, rid, operation.soap_action, idempotent=idempotent
            )
            span.answered(lambda: self._traced(raw, secret)["activity_id"])
            return self._read(operation, raw, rid, secret), raw


def _notify_secret(options: JobOptions | None) -> str:
    notify = options.notify if isinstance(options, JobOptions) else None
    return "" if notify is None else notify.password


#: The attributes of an error that may quote what the service sent (ids are left alone).
def _timed_out(waiting: Waiting[RealTimeFaxStatus], timeout: float, rid: str) -> WaitTimeoutError:
    pending = [i for batch in waiting.batches() for i in batch]
    unknown = [i for i in pending if i in waiting.latest and waiting.latest[i].error_code]
    because = f"; the service answered an error for {len(unknown)} of them" if unknown else ""
    return WaitTimeoutError(
        f"{len(pending)} of the jobs had not ended after {timeout:g} s{because}",
        statuses=waiting.results(),
        pending=pending,
        request_id=rid or None,
    )


StatusT = TypeVar("StatusT", bound=FaxStatus)


def _aligned(
    asked: list[str], answered: Iterable[StatusT], rid: str, mask: Callable[[str], str]
) -> list[StatusT]:
    """One status per id asked, in the order asked; an answer that names other ids, one twice,
    or leaves one out is a ProtocolError (a status paired with the wrong job is worse). An id
    the service wrote is masked before it is cut short (a cut secret is no longer found)."""
    found: dict[str, StatusT] = {}
    for status in answered:
        if status.job_id not in asked or status.job_id in found:
            which = "twice" if status.job_id in found else "though it was not asked for"
            raise ProtocolError(
                f"the status answer names job {excerpt(mask(status.job_id), 80)!r} {which}",
                request_id=rid,
            )
        found[status.job_id] = status
    missing = [i for i in asked if i not in found]
    if missing:
        raise ProtocolError(
            f"the status answer has no status for {len(missing)} of the {len(asked)} jobs "
            f"asked (first: {excerpt(missing[0], 80)!r})",
            request_id=rid,
        )
    return [found[i] for i in asked]


def _request_id(request_id: str | None) -> str:
    return new_request_id() if request_id is None else check_request_id(request_id)


#: A Recipient's fields in the order of FaxJobRecipient's elements: the writer's tuple form of
#: it (tests/protocol/test_equivalence.py checks the two orders agree).
_RECIPIENT_VALUES = operator.attrgetter("fax_number", "company", "title", "name", "secure_csid")

RecipientValues = tuple[str, str, str, str, str]


def _recipients(recipients: Sequence[Recipient | str]) -> tuple[RecipientValues, ...]:
    if isinstance(recipients, (str, bytes, Recipient)) or not isinstance(recipients, Sequence):
        raise BadInputError("recipients", "must be a list of Recipient")
    if not recipients:
        raise BadInputError("recipients", "must hold at least one recipient")
    out: list[RecipientValues] = []
    for i, r in enumerate(recipients):
        try:
            if r.__class__ is Recipient:
                out.append(_RECIPIENT_VALUES(r))  # checked when it was made
            elif isinstance(r, (str, Recipient)):
                # A number; or a subclass, which may have replaced the checks (or the values).
                values = (r, "", "", "", "") if isinstance(r, str) else _RECIPIENT_VALUES(r)
                check_recipient(*values)
                out.append(values)
            else:
                raise BadInputError(
                    f"recipients[{i}]", f"must be a Recipient, not {type(r).__name__}"
                )
        except BadInputError as exc:
            if exc.field.startswith("recipients["):
                raise
            raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
    return tuple(out)


def _files(files: Sequence[FaxFile]) -> tuple[tuple[int, int, Source], ...]:
    if isinstance(files, (str, bytes, FaxFile)) or not isinstance(files, Sequence):
        raise BadInputError("files", "must be a list of FaxFile")
    if not files:
        raise BadInputError("files", "must hold at least one file")
    out = []
    for i, f in enumerate(files):
        if not isinstance(f, FaxFile):
            raise BadInputError(f"files[{i}]", f"must be a FaxFile, not {type(f).__name__}")
        index = f.index if f.index is not None else i + 1
        out.append((index, f.file_type, f.content))  # FaxJobFile's order
    check_distinct_indexes([row[0] for row in out], "files[{}]".format, ".index")
    return tuple(out)
