# Generated from wsdl/FaxWS.wsdl by `make bindings` (python -m faxws._codegen).
# Do not edit: change the WSDL or XSD and regenerate.
"""Typed bindings of the FaxWS schema: a frozen dataclass per element and type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from faxws._protocol.xsd import BinaryContent, Operation, XmlField, XmlType

NAMESPACE: Final = "urn:FaxWS"

#: base64Binary content: bytes, or content streamed while sending.
Binary = bytes | BinaryContent


@dataclass(frozen=True, slots=True)
class FaxJobRecipient:
    """One recipient of a fax job."""

    recip_fax_number: str
    """Fax number of the recipient; its format is not shown in the interface."""
    recip_company: str
    """Company of the recipient; may be empty."""
    recip_title: str
    """Title of the recipient; may be empty."""
    recip_name: str
    """Name of the recipient; may be empty."""
    recip_secure_csid: str
    """Secure CSID of the recipient; its meaning is not shown in the interface. May be empty."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobRecipient",
        (
            XmlField("recip_fax_number", "RecipFaxNumber", "string", None, 1, 1),
            XmlField("recip_company", "RecipCompany", "string", None, 1, 1),
            XmlField("recip_title", "RecipTitle", "string", None, 1, 1),
            XmlField("recip_name", "RecipName", "string", None, 1, 1),
            XmlField("recip_secure_csid", "RecipSecureCSID", "string", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxJobRecipients:
    """The recipients of a fax job, one item each."""

    item: tuple[FaxJobRecipient, ...]
    """One recipient."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobRecipients",
        (XmlField("item", "item", "", FaxJobRecipient, 1, None),),
    )


@dataclass(frozen=True, slots=True)
class FaxJobFile:
    """One file of a fax job."""

    file_index: int
    """Position of the file in the job, counted from 1."""
    file_type_id: int
    """Numeric file type identifier (101 is PDF); the full set of allowed values is not shown in the interface."""
    file_data: Binary
    """Content of the file, base64-encoded."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobFile",
        (
            XmlField("file_index", "FileIndex", "int", None, 1, 1),
            XmlField("file_type_id", "FileTypeId", "int", None, 1, 1),
            XmlField("file_data", "FileData", "base64Binary", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxJobFiles:
    """The files of a fax job, one item each."""

    item: tuple[FaxJobFile, ...]
    """One file."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobFiles",
        (XmlField("item", "item", "", FaxJobFile, 1, None),),
    )


@dataclass(frozen=True, slots=True)
class SendFax:
    """Request: submit a fax job with one or more recipients and one or more files."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    recipients: FaxJobRecipients
    """Recipients of the job."""
    fax_job_files: FaxJobFiles
    """Files of the job."""

    __xml__: ClassVar[XmlType] = XmlType(
        "SendFax",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("recipients", "Recipients", "", FaxJobRecipients, 1, 1),
            XmlField("fax_job_files", "FaxJobFiles", "", FaxJobFiles, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxJobId:
    """Identifier of one submitted fax job."""

    job_id: str
    """Job identifier assigned by the service."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobId",
        (XmlField("job_id", "JobId", "string", None, 1, 1),),
    )


@dataclass(frozen=True, slots=True)
class FaxJobIds:
    """Job identifiers, one per recipient, in recipient order."""

    item: tuple[FaxJobId, ...]
    """One job identifier."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJobIds",
        (XmlField("item", "item", "", FaxJobId, 0, None),),
    )


@dataclass(frozen=True, slots=True)
class WSError:
    """Error report of the service; ErrorCode 0 means no error."""

    error_code: int
    """Error code; 0 for success, -5019 for an unknown job id; other codes are not shown in the interface."""
    error_string: str
    """Human-readable error text; empty on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "WSError",
        (
            XmlField("error_code", "ErrorCode", "int", None, 1, 1),
            XmlField("error_string", "ErrorString", "string", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxSendResponse:
    """Response to SendFax."""

    return_: bool
    """True when the job was accepted."""
    fax_job_ids: FaxJobIds
    """Identifiers of the submitted jobs, one per recipient."""
    ttfp: int
    """Estimated seconds until the job starts (time to first page)."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxSendResponse",
        (
            XmlField("return_", "return", "boolean", None, 1, 1),
            XmlField("fax_job_ids", "FaxJobIds", "", FaxJobIds, 1, 1),
            XmlField("ttfp", "TTFP", "long", None, 1, 1),
            XmlField("ws_error", "WSError", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class GetFaxBroadcastReport:
    """Request: ask for the report of a fax job, optionally narrowed to one recipient."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    job_id: str
    """Identifier of the fax job to report on."""
    recipient_type: int
    """Kind of recipient address in RecipAddress; allowed values are not shown in the interface."""
    recip_address: str
    """Address of the recipient to report on; its format is not shown in the interface."""

    __xml__: ClassVar[XmlType] = XmlType(
        "GetFaxBroadcastReport",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("job_id", "JobId", "string", None, 1, 1),
            XmlField("recipient_type", "RecipientType", "int", None, 1, 1),
            XmlField("recip_address", "RecipAddress", "string", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class GetFaxBroadcastReportResponse:
    """Response to GetFaxBroadcastReport; the report itself is not in it (its delivery is not shown in the interface)."""

    return_: bool
    """True when the report request was accepted."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "GetFaxBroadcastReportResponse",
        (
            XmlField("return_", "return", "boolean", None, 1, 1),
            XmlField("ws_error", "WSError", "", WSError, 1, 1),
        ),
    )


SEND_FAX: Final = Operation(
    "SendFax",
    "",
    SendFax,
    FaxSendResponse,
    "Submit a fax job.",
)


GET_FAX_BROADCAST_REPORT: Final = Operation(
    "GetFaxBroadcastReport",
    "",
    GetFaxBroadcastReport,
    GetFaxBroadcastReportResponse,
    "Request the broadcast report of a fax job.",
)

#: Operations of the binding, by name.
OPERATIONS: Final[Mapping[str, Operation[Any, Any]]] = {
    "SendFax": SEND_FAX,
    "GetFaxBroadcastReport": GET_FAX_BROADCAST_REPORT,
}

#: Classes of the top-level elements, by element name.
ELEMENTS: Final = {
    "SendFax": SendFax,
    "FaxSendResponse": FaxSendResponse,
    "GetFaxBroadcastReport": GetFaxBroadcastReport,
    "GetFaxBroadcastReportResponse": GetFaxBroadcastReportResponse,
}
