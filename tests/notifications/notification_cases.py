"""What the notification tests share: the receiver's credentials, an event, the same event as
the service posts it in each flavour (written out by hand, not by faxws), and helpers."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from faxws.notifications import DeliveryNotification, parse_notification

USER = "notify-user"
# '&', '+', ' ', '=' and non-ASCII: each encoding (base64, URL, repr) spells it differently.
PASSWORD = "PWMARK-9q&+ =é"
CREDENTIALS = (USER, PASSWORD)

IMAGE = b"II*\x00\x08\x00\x00\x00\r\n--not-a-boundary\r\n\x00\xff"

EVENT = DeliveryNotification(
    account_id="12345",
    reference_id="REF-1",
    job_id="JOB-77",
    status_id=1,
    description="Success",
    page_count=2,
    delivered_at=datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=-5))),
    duration_seconds=61,
    remote_csid="+1 555 0100",
    error_code=0,
    error_string="",
)

FORM = (
    {"Content-Type": "application/x-www-form-urlencoded"},
    b"AccountId=12345&ReferenceId=REF-1&FaxJobId=JOB-77&FaxJobStatusId=1"
    b"&StatusDescription=Success&PageCount=2&FaxDeliveryDateTime=2025-03-04T05%3A06%3A07-05%3A00"
    b"&FaxDeliveryDuration=61&RemoteFaxCSID=%2B1+555+0100&ErrorCode=0&ErrorString=",
)


def _part(name: str, value: bytes, extra: str = "") -> bytes:
    head = f'--XyZ-boundary\r\nContent-Disposition: form-data; name="{name}"{extra}\r\n\r\n'
    return head.encode() + value + b"\r\n"


MULTIPART = (
    {"Content-Type": "multipart/form-data; boundary=XyZ-boundary"},
    b"".join(
        [
            _part("AccountId", b"12345"),
            _part("ReferenceId", b"REF-1"),
            _part("FaxJobId", b"JOB-77"),
            _part("FaxJobStatusId", b"1"),
            _part("StatusDescription", b"Success"),
            _part("PageCount", b"2"),
            _part("FaxDeliveryDateTime", b"2025-03-04T05:06:07-05:00"),
            _part("FaxDeliveryDuration", b"61"),
            _part("RemoteFaxCSID", b"+1 555 0100"),
            _part("ErrorCode", b"0"),
            _part("ErrorString", b""),
            _part("DeliveredImage", IMAGE, '; filename="fax.tif"\r\nContent-Type: image/tiff'),
            b"--XyZ-boundary--\r\n",
        ]
    ),
)

SOAP_FIELDS = (
    "<AccountId>12345</AccountId><ReferenceId>REF-1</ReferenceId><FaxJobId>JOB-77</FaxJobId>"
    "<FaxJobStatusId>1</FaxJobStatusId><StatusDescription>Success</StatusDescription>"
    "<PageCount>2</PageCount><FaxDeliveryDateTime>2025-03-04T05:06:07-05:00</FaxDeliveryDateTime>"
    "<FaxDeliveryDuration>61</FaxDeliveryDuration><RemoteFaxCSID>+1 555 0100</RemoteFaxCSID>"
    "<ErrorCode>0</ErrorCode><ErrorString />"
)
SOAP_HEADERS = {
    "Content-Type": "text/xml; charset=utf-8",
    "SOAPAction": '"C3FDNS/FaxDeliveryNotification"',
}


def soap_body(fields: str = SOAP_FIELDS, image: bytes | None = IMAGE) -> bytes:
    """A SOAP 1.1 push as .NET writes one: the fields in the default namespace ``C3FDNS``, the
    image as base64 broken into lines."""
    if image is not None:
        encoded = base64.encodebytes(image).decode("ascii")
        fields += f"<DeliveredImage>{encoded}</DeliveredImage>"
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f'  <soap:Body>\n    <FaxDeliveryNotification xmlns="C3FDNS">{fields}'
        "</FaxDeliveryNotification>\n  </soap:Body>\n</soap:Envelope>\n"
    ).encode()


SOAP = (SOAP_HEADERS, soap_body())


def basic(user: str, password: str) -> str:
    """An Authorization header's value with these HTTP Basic credentials (UTF-8)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def parse(
    rendered: tuple[Mapping[str, str] | Iterable[tuple[str, str]], bytes], **kwargs: Any
) -> DeliveryNotification:
    """``parse_notification`` of what ``render_notification`` (or a case here) gives: headers
    first, as a request has them."""
    headers, body = rendered
    return parse_notification(body, headers, **kwargs)
