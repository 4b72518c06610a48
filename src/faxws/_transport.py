"""HTTP for the client: one pooled requests session, and requests' errors mapped onto ours.

The session ignores the environment (``trust_env=False``): a ``~/.netrc`` entry would
otherwise replace the Bearer header, and proxy variables would reroute credentials
silently. Redirects are not followed, so credentials never go to another host.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import requests
import requests.adapters
import urllib3.exceptions

from faxws.errors import ConnectError, ProtocolError, RequestTimeoutError, TransportError, excerpt

#: (connect, read) seconds.
Timeout = float | tuple[float, float]
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 60.0)
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: Mapping[str, str]
    content: bytes
    elapsed: float


def _never_connected(exc: BaseException) -> bool:
    """True when a requests ConnectionError happened before any byte was sent."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        cur = stack.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError)):
            return True
        if isinstance(cur, urllib3.exceptions.NameResolutionError):
            return True
        stack.append(getattr(cur, "reason", None))
        stack.extend(a for a in cur.args if isinstance(a, BaseException))
        stack.append(cur.__cause__)
        stack.append(cur.__context__)
    return False


class HttpTransport:
    """POSTs request bodies to one URL and reads bounded responses."""

    def __init__(
        self,
        url: str,
        *,
        timeout: Timeout,
        verify: bool | str,
        proxies: Mapping[str, str] | None,
        max_connections: int,
        max_response_bytes: int,
        user_agent: str,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        session = requests.Session()
        session.trust_env = False
        session.verify = verify
        if proxies:
            session.proxies.update(proxies)
        adapter = requests.adapters.HTTPAdapter(
            pool_connections=1, pool_maxsize=max_connections, max_retries=0
        )
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        session.headers["User-Agent"] = user_agent
        self._session = session
        self._proxies = dict(proxies or {})
        # The request line, URL and fixed headers are prepared once; each call copies the
        # template and sets its own headers and body. This skips requests' per-call merging
        # of session settings, cookies and hooks, none of which a SOAP call uses.
        self._template = requests.Request("POST", url, headers=dict(session.headers)).prepare()

    def _prepare(
        self, body: bytes | Iterable[bytes], headers: Mapping[str, str]
    ) -> requests.PreparedRequest:
        request = self._template.copy()
        assert request.headers is not None
        request.headers.update(headers)
        request.prepare_body(body, None)
        return request

    def close(self) -> None:
        self._session.close()

    def post(
        self, body: bytes | Iterable[bytes], headers: Mapping[str, str], request_id: str
    ) -> RawResponse:
        start = time.perf_counter()
        try:
            response = self._session.send(
                self._prepare(body, headers),
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
                verify=self._session.verify,
                proxies=self._proxies,
            )
        except requests.exceptions.ConnectTimeout as exc:
            raise RequestTimeoutError(
                f"connecting to the service timed out: {excerpt(str(exc), 200)}",
                request_id=request_id,
                maybe_delivered=False,
            ) from exc
        except requests.exceptions.ReadTimeout as exc:
            raise RequestTimeoutError(
                "the service did not answer in time; the request may have been delivered",
                request_id=request_id,
                maybe_delivered=True,
            ) from exc
        except (requests.exceptions.SSLError, requests.exceptions.ProxyError) as exc:
            raise ConnectError(
                f"cannot connect to the service: {excerpt(str(exc), 200)}", request_id=request_id
            ) from exc
        except requests.exceptions.ConnectionError as exc:
            if _never_connected(exc):
                raise ConnectError(
                    f"cannot connect to the service: {excerpt(str(exc), 200)}",
                    request_id=request_id,
                ) from exc
            raise TransportError(
                f"the connection failed during the exchange: {excerpt(str(exc), 200)}",
                request_id=request_id,
                maybe_delivered=True,
            ) from exc
        except requests.exceptions.RequestException as exc:
            raise TransportError(
                f"the HTTP exchange failed: {excerpt(str(exc), 200)}",
                request_id=request_id,
                maybe_delivered=True,
            ) from exc
        try:
            content = self._read(response, request_id)
        finally:
            response.close()
        return RawResponse(
            response.status_code, response.headers, content, time.perf_counter() - start
        )

    def _read(self, response: requests.Response, request_id: str) -> bytes:
        """The body, bounded in size and in time: a server that drips its answer cannot
        hold a call for longer than the read time-out (each read waits at most that long,
        and so does the whole answer)."""
        read_timeout = self.timeout[1] if isinstance(self.timeout, tuple) else self.timeout
        deadline = time.monotonic() + read_timeout
        raw = response.raw
        chunks: list[bytes] = []
        total = 0
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise ProtocolError(
                f"the response is larger than {self.max_response_bytes} bytes "
                f"(Content-Length {declared})",
                request_id=request_id,
                status_code=response.status_code,
            )
        try:
            while True:
                chunk = raw.read1(65536, decode_content=True)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.max_response_bytes:
                    raise ProtocolError(
                        f"the response is larger than {self.max_response_bytes} bytes",
                        request_id=request_id,
                        status_code=response.status_code,
                    )
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise RequestTimeoutError(
                        f"the response took longer than {read_timeout} s to arrive; the "
                        "request may have been delivered",
                        request_id=request_id,
                        maybe_delivered=True,
                    )
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise RequestTimeoutError(
                "the response stopped arriving in time; the request may have been delivered",
                request_id=request_id,
                maybe_delivered=True,
            ) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(
                f"the connection failed while reading the response: {excerpt(str(exc), 200)}",
                request_id=request_id,
                maybe_delivered=True,
            ) from exc
        return b"".join(chunks)
