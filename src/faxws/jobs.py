"""Job-level options of a send: given, the send goes as SendFaxEx (else as SendFax).

Every option is checked where it is made, naming the field, before any byte goes out. A send
with options always carries a ReferenceId (one is made when none is given), so that a send
whose answer was lost can be looked up by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from faxws._protocol import assumptions as vendor
from faxws._protocol.checks import check_text
from faxws.bindings import FaxJob
from faxws.errors import BadInputError

__all__ = ["JobOptions", "Notify"]

#: Longest ReferenceId faxws sends (the vendor publishes no limit; this one keeps the
#: ``JRI-`` lookup and the push notification's field short).
MAX_REFERENCE_LENGTH = 64


@dataclass(frozen=True, slots=True)
class Notify:
    """Where the service reports the job's completion.

    ``kind``: ``"post"`` (an HTTP POST of the form flavour to ``destination``, a URL),
    ``"get"``, or ``"email"`` (``destination`` an address). ``user`` and ``password`` are the
    HTTP Basic credentials the push comes with (check them with
    :func:`faxws.notifications.parse_notification`); the password is never shown.
    """

    destination: str
    kind: str = "post"
    user: str = ""
    password: str = field(default="", repr=False)
    include_image: bool = False

    def __post_init__(self) -> None:
        check_text("notify.destination", self.destination, required=True)
        if self.kind not in vendor.NOTIFY_TYPES or self.kind == "none":
            raise BadInputError(
                "notify.kind", f"must be one of post, get, email, not {self.kind!r}"
            )
        check_text("notify.user", self.user)
        check_text("notify.password", self.password)
        if not isinstance(self.include_image, bool):
            raise BadInputError("notify.include_image", "must be a bool")


@dataclass(frozen=True, slots=True)
class JobOptions:
    """Options of one send, all optional. Datetimes must carry a time zone.

    ``start_at``: start no earlier (at most 4 days ahead; a past time starts at once).
    ``expires_at``: give up an undelivered fax then (at most 2 days after the start; the
    service's default is 2 days). ``cover_name`` names one of the account's cover pages.
    """

    reference_id: str | None = None
    start_at: datetime | None = None
    expires_at: datetime | None = None
    sender_csid: str = ""
    sender_name: str = ""
    sender_company: str = ""
    sender_phone: str = ""
    sender_fax: str = ""
    cover_name: str = ""
    cover_subject: str = ""
    cover_text: str = ""
    resolution: str = ""
    notify: Notify | None = None

    def __post_init__(self) -> None:
        if self.reference_id is not None:
            ref = check_text("reference_id", self.reference_id, required=True)
            if len(ref) > MAX_REFERENCE_LENGTH or not ref.isascii() or not ref.isprintable():
                raise BadInputError(
                    "reference_id",
                    f"must be printable ASCII of at most {MAX_REFERENCE_LENGTH} characters",
                )
        for name in ("start_at", "expires_at"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
                raise BadInputError(name, "must be a datetime with a time zone")
        if self.start_at and self.expires_at and self.expires_at <= self.start_at:
            raise BadInputError("expires_at", "must be after start_at")
        for name in (
            "sender_csid",
            "sender_name",
            "sender_company",
            "sender_phone",
            "sender_fax",
            "cover_name",
            "cover_subject",
            "cover_text",
            "resolution",
        ):
            check_text(name, getattr(self, name))
        if self.notify is not None and not isinstance(self.notify, Notify):
            raise BadInputError("notify", f"must be a Notify, not {type(self.notify).__name__}")


def job_details(options: JobOptions, reference_id: str, now: datetime) -> FaxJob:
    """The JobDetails element of a SendFaxEx; ``now`` (aware) bounds the schedule."""
    start = options.start_at
    if start is not None and start - now > vendor.MAX_SCHEDULE_AHEAD:
        raise BadInputError("start_at", "is more than 4 days ahead (the service refuses it)")
    if options.expires_at is not None:
        begins = max(start or now, now)
        if options.expires_at - begins > vendor.MAX_EXPIRY + timedelta(minutes=1):
            raise BadInputError(
                "expires_at", "is more than 2 days after the start (the service would cut it)"
            )
    notify = options.notify
    return FaxJob(
        job_schedule_start_type=vendor.SCHEDULE_IMMEDIATE if start is None else vendor.SCHEDULE_AT,
        job_schedule_start_date="" if start is None else vendor.format_datetime(start),
        job_expiry_date=(
            "" if options.expires_at is None else vendor.format_datetime(options.expires_at)
        ),
        sender_csid=options.sender_csid,
        sender_name=options.sender_name,
        sender_company=options.sender_company,
        sender_phone=options.sender_phone,
        cover_text=options.cover_text,
        cover_name=options.cover_name,
        cover_subject=options.cover_subject,
        reference_id=reference_id,
        resolution=options.resolution,
        sender_fax=options.sender_fax,
        software_client="faxws",
        notify_type=vendor.NOTIFY_TYPES["none" if notify is None else notify.kind],
        notify_include_delivered_image=int(notify is not None and notify.include_image),
        notify_destination="" if notify is None else notify.destination,
        notify_auth_user="" if notify is None else notify.user,
        notify_auth_password="" if notify is None else notify.password,
    )
