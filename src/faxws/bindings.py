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


@dataclass(frozen=True, slots=True)
class FaxJob:
    """Job-level options of SendFaxEx: schedule, expiry, sender, cover page, reference and completion notification."""

    job_schedule_start_type: int
    """0 to start at once, 1 to start at JobScheduleStartDate (the vendor does not publish the numbers; faxws's reading)."""
    job_schedule_start_date: str
    """When to start a scheduled job (YYYY-MM-DDTHH:MM:SS+HH:MM); at most 4 days ahead, else error -5040. Empty for an immediate job."""
    job_expiry_date: str
    """When an undelivered job expires (same format); at most 2 days after the start. Empty for the service's default of 2 days."""
    sender_csid: str
    """Identification printed at the top of each page; may be empty."""
    sender_name: str
    """Sender name for the cover page; may be empty."""
    sender_company: str
    """Sender company for the cover page; may be empty."""
    sender_phone: str
    """Sender telephone number for the cover page; may be empty."""
    cover_text: str
    """Body text of the cover page; may be empty."""
    cover_name: str
    """Name of one of the account's cover pages; empty for no cover page."""
    cover_subject: str
    """Subject of the cover page; may be empty."""
    reference_id: str
    """The client's reference for the job; SimpleGetFaxStatus accepts JRI-ReferenceId in place of a job id."""
    resolution: str
    """Resolution of the fax; the accepted values are not published. Empty for the account's default."""
    sender_fax: str
    """Sender fax number for the cover page; may be empty."""
    software_client: str
    """Name of the sending software; its use is not published."""
    notify_type: int
    """Kind of completion notification: 0 none, 1 email, 2 HTTP GET, 3 HTTP POST (one public client's reading; not published)."""
    notify_include_delivered_image: int
    """1 to include the delivered image in the completion notification, else 0."""
    notify_destination: str
    """Email address or URL the completion notification goes to; may be empty."""
    notify_auth_user: str
    """User name the completion notification is sent with (HTTP Basic); may be empty."""
    notify_auth_password: str
    """Password the completion notification is sent with (HTTP Basic); may be empty."""
    user_field1: str | None = None
    """User field 1; its use is not published."""
    user_field2: str | None = None
    """User field 2; its use is not published."""
    user_field3: str | None = None
    """User field 3; its use is not published."""
    user_field4: str | None = None
    """User field 4; its use is not published."""
    user_field5: str | None = None
    """User field 5; its use is not published."""
    user_field6: str | None = None
    """User field 6; its use is not published."""
    user_field7: str | None = None
    """User field 7; its use is not published."""
    user_field8: str | None = None
    """User field 8; its use is not published."""
    user_field9: str | None = None
    """User field 9; its use is not published."""
    user_field10: str | None = None
    """User field 10; its use is not published."""
    user_field11: str | None = None
    """User field 11; its use is not published."""
    user_field12: str | None = None
    """User field 12; its use is not published."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxJob",
        (
            XmlField("job_schedule_start_type", "JobScheduleStartType", "int", None, 1, 1),
            XmlField("job_schedule_start_date", "JobScheduleStartDate", "string", None, 1, 1),
            XmlField("job_expiry_date", "JobExpiryDate", "string", None, 1, 1),
            XmlField("sender_csid", "SenderCSID", "string", None, 1, 1),
            XmlField("sender_name", "SenderName", "string", None, 1, 1),
            XmlField("sender_company", "SenderCompany", "string", None, 1, 1),
            XmlField("sender_phone", "SenderPhone", "string", None, 1, 1),
            XmlField("cover_text", "CoverText", "string", None, 1, 1),
            XmlField("cover_name", "CoverName", "string", None, 1, 1),
            XmlField("cover_subject", "CoverSubject", "string", None, 1, 1),
            XmlField("reference_id", "ReferenceId", "string", None, 1, 1),
            XmlField("resolution", "Resolution", "string", None, 1, 1),
            XmlField("sender_fax", "SenderFax", "string", None, 1, 1),
            XmlField("software_client", "SoftwareClient", "string", None, 1, 1),
            XmlField("notify_type", "NotifyType", "int", None, 1, 1),
            XmlField(
                "notify_include_delivered_image", "NotifyIncludeDeliveredImage", "int", None, 1, 1
            ),
            XmlField("notify_destination", "NotifyDestination", "string", None, 1, 1),
            XmlField("notify_auth_user", "NotifyAuthUser", "string", None, 1, 1),
            XmlField("notify_auth_password", "NotifyAuthPassword", "string", None, 1, 1),
            XmlField("user_field1", "UserField1", "string", None, 0, 1),
            XmlField("user_field2", "UserField2", "string", None, 0, 1),
            XmlField("user_field3", "UserField3", "string", None, 0, 1),
            XmlField("user_field4", "UserField4", "string", None, 0, 1),
            XmlField("user_field5", "UserField5", "string", None, 0, 1),
            XmlField("user_field6", "UserField6", "string", None, 0, 1),
            XmlField("user_field7", "UserField7", "string", None, 0, 1),
            XmlField("user_field8", "UserField8", "string", None, 0, 1),
            XmlField("user_field9", "UserField9", "string", None, 0, 1),
            XmlField("user_field10", "UserField10", "string", None, 0, 1),
            XmlField("user_field11", "UserField11", "string", None, 0, 1),
            XmlField("user_field12", "UserField12", "string", None, 0, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class SendFaxEx:
    """Request: submit a fax job as SendFax does, with job-level options."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    recipients: FaxJobRecipients
    """Recipients of the job."""
    fax_job_files: FaxJobFiles
    """Files of the job."""
    job_details: FaxJob
    """Job-level options."""

    __xml__: ClassVar[XmlType] = XmlType(
        "SendFaxEx",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("recipients", "Recipients", "", FaxJobRecipients, 1, 1),
            XmlField("fax_job_files", "FaxJobFiles", "", FaxJobFiles, 1, 1),
            XmlField("job_details", "JobDetails", "", FaxJob, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxSendExResponse:
    """Response to SendFaxEx."""

    return_: bool
    """True when the job was accepted."""
    fax_job_ids: FaxJobIds
    """Identifiers of the submitted jobs, one per recipient."""
    ttfp: int
    """Estimated seconds until the job starts (time to first page)."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxSendExResponse",
        (
            XmlField("return_", "return", "boolean", None, 1, 1),
            XmlField("fax_job_ids", "FaxJobIds", "", FaxJobIds, 1, 1),
            XmlField("ttfp", "TTFP", "long", None, 1, 1),
            XmlField("ws_error", "WSError", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class SimpleGetFaxStatus:
    """Request: the status of one job, by job id or by JRI-ReferenceId."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    job_id: str
    """A job identifier, or JRI- followed by the ReferenceId the job was sent with."""

    __xml__: ClassVar[XmlType] = XmlType(
        "SimpleGetFaxStatus",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("job_id", "JobId", "string", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class SimpleFaxStatusResponse:
    """Response to SimpleGetFaxStatus."""

    return_: int
    """1 succeeded, 2 failed, 3 in progress; -5019 for an unknown job id."""

    __xml__: ClassVar[XmlType] = XmlType(
        "SimpleFaxStatusResponse",
        (XmlField("return_", "return", "long", None, 1, 1),),
    )


@dataclass(frozen=True, slots=True)
class GetFaxStatus:
    """Request: the status of several jobs."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    fax_job_ids: FaxJobIds
    """The job identifiers to look up."""

    __xml__: ClassVar[XmlType] = XmlType(
        "GetFaxStatus",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("fax_job_ids", "FaxJobIds", "", FaxJobIds, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxStatus:
    """Status of one job."""

    fax_job_id: str
    """Identifier of the job."""
    fax_job_status_id: int
    """1 succeeded, 2 failed, 3 in progress."""
    status_description: str
    """The status in words."""
    error: WSError
    """Error report of this item; ErrorCode 0 when the job was found."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxStatus",
        (
            XmlField("fax_job_id", "FaxJobId", "string", None, 1, 1),
            XmlField("fax_job_status_id", "FaxJobStatusId", "int", None, 1, 1),
            XmlField("status_description", "StatusDescription", "string", None, 1, 1),
            XmlField("error", "Error", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class FaxStatusList:
    """Statuses, one item per job id asked for."""

    item: tuple[FaxStatus, ...]
    """One job's status."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxStatusList",
        (XmlField("item", "item", "", FaxStatus, 0, None),),
    )


@dataclass(frozen=True, slots=True)
class FaxStatusResponse:
    """Response to GetFaxStatus."""

    return_: bool
    """True when the request was accepted."""
    fax_status_list: FaxStatusList
    """One status per job id asked for."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "FaxStatusResponse",
        (
            XmlField("return_", "return", "boolean", None, 1, 1),
            XmlField("fax_status_list", "FaxStatusList", "", FaxStatusList, 1, 1),
            XmlField("ws_error", "WSError", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class GetRealTimeFaxStatusEx2:
    """Request: the status of several jobs with delivery progress and reference."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    fax_job_ids: FaxJobIds
    """The job identifiers to look up."""

    __xml__: ClassVar[XmlType] = XmlType(
        "GetRealTimeFaxStatusEx2",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("fax_job_ids", "FaxJobIds", "", FaxJobIds, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class RealTimeFaxStatusEx2:
    """Status of one job with its delivery progress and reference."""

    fax_job_id: str
    """Identifier of the job."""
    fax_job_status_id: int
    """1 succeeded, 2 failed, 3 in progress."""
    status_description: str
    """The status in words."""
    recipient_state: int
    """State of the delivery to the recipient; the values are not published."""
    recipient_current_page_count: int
    """Pages sent so far."""
    recipient_total_page_count: int
    """Pages to send in all."""
    fax_delivery_date_time: str
    """When the fax was delivered (YYYY-MM-DDTHH:MM:SS+HH:MM); empty before."""
    fax_delivery_duration: int
    """Duration of the delivering call in seconds."""
    remote_fax_csid: str
    """Identification the receiving machine gave; may be empty."""
    reference_id: str
    """The ReferenceId the job was sent with; may be empty."""
    error: WSError
    """Error report of this item; ErrorCode 0 when the job was found."""

    __xml__: ClassVar[XmlType] = XmlType(
        "RealTimeFaxStatusEx2",
        (
            XmlField("fax_job_id", "FaxJobId", "string", None, 1, 1),
            XmlField("fax_job_status_id", "FaxJobStatusId", "int", None, 1, 1),
            XmlField("status_description", "StatusDescription", "string", None, 1, 1),
            XmlField("recipient_state", "RecipientState", "int", None, 1, 1),
            XmlField(
                "recipient_current_page_count", "RecipientCurrentPageCount", "int", None, 1, 1
            ),
            XmlField("recipient_total_page_count", "RecipientTotalPageCount", "int", None, 1, 1),
            XmlField("fax_delivery_date_time", "FaxDeliveryDateTime", "string", None, 1, 1),
            XmlField("fax_delivery_duration", "FaxDeliveryDuration", "int", None, 1, 1),
            XmlField("remote_fax_csid", "RemoteFaxCSID", "string", None, 1, 1),
            XmlField("reference_id", "ReferenceId", "string", None, 1, 1),
            XmlField("error", "Error", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class RealTimeFaxStatusEx2List:
    """Statuses with delivery progress, one item per job id asked for."""

    item: tuple[RealTimeFaxStatusEx2, ...]
    """One job's status."""

    __xml__: ClassVar[XmlType] = XmlType(
        "RealTimeFaxStatusEx2List",
        (XmlField("item", "item", "", RealTimeFaxStatusEx2, 0, None),),
    )


@dataclass(frozen=True, slots=True)
class RealTimeFaxStatusEx2Response:
    """Response to GetRealTimeFaxStatusEx2."""

    return_: bool
    """True when the request was accepted."""
    fax_status_list: RealTimeFaxStatusEx2List
    """One status per job id asked for."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "RealTimeFaxStatusEx2Response",
        (
            XmlField("return_", "return", "boolean", None, 1, 1),
            XmlField("fax_status_list", "FaxStatusList", "", RealTimeFaxStatusEx2List, 1, 1),
            XmlField("ws_error", "WSError", "", WSError, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class CancelFax:
    """Request: ask to cancel a job that has not ended."""

    user_id: str
    """Identifies the user (for example mbx1234567890)."""
    str_pin: str
    """Empty in OAuth 2.0 mode; the user's PIN or password in username-and-password mode."""
    job_id: str
    """Identifier of the job to cancel."""

    __xml__: ClassVar[XmlType] = XmlType(
        "CancelFax",
        (
            XmlField("user_id", "UserID", "string", None, 1, 1),
            XmlField("str_pin", "strPIN", "string", None, 1, 1),
            XmlField("job_id", "JobId", "string", None, 1, 1),
        ),
    )


@dataclass(frozen=True, slots=True)
class CancelFaxResponse:
    """Response to CancelFax; true means the request was accepted."""

    return_: bool
    """True when the request was accepted."""
    ws_error: WSError
    """Error report; ErrorCode 0 on success."""

    __xml__: ClassVar[XmlType] = XmlType(
        "CancelFaxResponse",
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


SEND_FAX_EX: Final = Operation(
    "SendFaxEx",
    "",
    SendFaxEx,
    FaxSendExResponse,
    "Submit a fax job with job-level options (schedule, expiry, sender, cover page, reference, notification).",
)


SIMPLE_GET_FAX_STATUS: Final = Operation(
    "SimpleGetFaxStatus",
    "",
    SimpleGetFaxStatus,
    SimpleFaxStatusResponse,
    "The status of one job, by job id or by JRI-ReferenceId.",
)


GET_FAX_STATUS: Final = Operation(
    "GetFaxStatus",
    "",
    GetFaxStatus,
    FaxStatusResponse,
    "The status of several jobs.",
)


GET_REAL_TIME_FAX_STATUS_EX2: Final = Operation(
    "GetRealTimeFaxStatusEx2",
    "",
    GetRealTimeFaxStatusEx2,
    RealTimeFaxStatusEx2Response,
    "The status of several jobs with delivery progress and reference.",
)


CANCEL_FAX: Final = Operation(
    "CancelFax",
    "",
    CancelFax,
    CancelFaxResponse,
    "Ask to cancel a job that has not ended.",
)

#: Operations of the binding, by name.
OPERATIONS: Final[Mapping[str, Operation[Any, Any]]] = {
    "SendFax": SEND_FAX,
    "GetFaxBroadcastReport": GET_FAX_BROADCAST_REPORT,
    "SendFaxEx": SEND_FAX_EX,
    "SimpleGetFaxStatus": SIMPLE_GET_FAX_STATUS,
    "GetFaxStatus": GET_FAX_STATUS,
    "GetRealTimeFaxStatusEx2": GET_REAL_TIME_FAX_STATUS_EX2,
    "CancelFax": CANCEL_FAX,
}

#: Classes of the top-level elements, by element name.
ELEMENTS: Final = {
    "SendFax": SendFax,
    "FaxSendResponse": FaxSendResponse,
    "GetFaxBroadcastReport": GetFaxBroadcastReport,
    "GetFaxBroadcastReportResponse": GetFaxBroadcastReportResponse,
    "SendFaxEx": SendFaxEx,
    "FaxSendExResponse": FaxSendExResponse,
    "SimpleGetFaxStatus": SimpleGetFaxStatus,
    "SimpleFaxStatusResponse": SimpleFaxStatusResponse,
    "GetFaxStatus": GetFaxStatus,
    "FaxStatusResponse": FaxStatusResponse,
    "GetRealTimeFaxStatusEx2": GetRealTimeFaxStatusEx2,
    "RealTimeFaxStatusEx2Response": RealTimeFaxStatusEx2Response,
    "CancelFax": CancelFax,
    "CancelFaxResponse": CancelFaxResponse,
}
