"""``faxws send``: one or more documents to one or more fax numbers (SendFax, or SendFaxEx
with job options), and with ``--wait`` each job followed until it ends."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from typing import Any, BinaryIO

from faxws.cli import _client
from faxws.cli._client import NOTIFY_PASSWORD_ENV
from faxws.cli._output import EXIT_CODES_HELP, Outcome, UsageError

SUMMARY = "send a fax (SendFax; SendFaxEx with job options)"
DESCRIPTION = """\
Send one or more files to one or more fax numbers. Any job option (--reference, --start-at,
--sender-*, --cover-*, --notify-url, ...) makes it a SendFaxEx, which always carries a
reference id (one is made when --reference is not given): a send whose outcome is unknown
can be looked up by it with faxws status --reference REF.

With --wait the command follows every job until it ends, showing each recipient's progress
(on a terminal in one line rewritten in place; otherwise a line per change), then a final line
per job; with --json only the final object. The fax is sent either way: exit 6 says a job
failed, 7 that waiting timed out, 130 that waiting was interrupted."""
EXAMPLE = """\
example:
  export FAXWS_BASE_URL=https://fax.example.com FAXWS_USER_ID=mbx1234567890
  export FAXWS_TOKEN=...            # or FAXWS_PIN=..., or the FAXWS_CLIENT_* settings
  faxws send --to "+1 555 0100" --name Bob --to "+1 555 0101" contract.pdf
  scan-to-pdf | faxws send --to "+1 555 0100" - --file-type pdf
  faxws send --to "+1 555 0100" contract.pdf --reference invoice-2041 --wait
  faxws send --to "+1 555 0100" contract.pdf --start-at 2025-06-02T08:00:00+02:00
  FAXWS_NOTIFY_PASSWORD=... faxws send --to "+1 555 0100" contract.pdf \\
      --notify-url https://you.example/fax-done --notify-user faxws
"""
#: The job options given as text, named as JobOptions names them, with their help.
JOB_TEXT_OPTIONS = {
    "sender_name": "sender's name (for the cover page)",
    "sender_company": "sender's company",
    "sender_phone": "sender's phone number",
    "sender_fax": "sender's fax number",
    "sender_csid": "sender's fax identification (CSID)",
    "cover_name": "one of the account's cover pages, by name",
    "cover_subject": "cover page subject",
    "cover_text": "cover page text",
    "resolution": "resolution, as the service names it",
}
EPILOG = EXAMPLE + "\n" + EXIT_CODES_HELP

#: Standard input up to this size stays in memory; a larger document is spooled to disk.
STDIN_IN_MEMORY = 4 * 1024 * 1024
STDIN_NAME = "<stdin>"


def spool_stdin(source: BinaryIO) -> BinaryIO:
    """``source`` (standard input: usually a pipe, read once, not sought) copied into a seekable
    file, to be streamed while sending like a file on disk: up to ``STDIN_IN_MEMORY`` bytes in
    memory, a larger document in an anonymous temporary file. The caller closes the result."""
    import io
    import shutil
    import tempfile

    head = source.read(STDIN_IN_MEMORY + 1)
    while head and len(head) <= STDIN_IN_MEMORY:  # a raw stream may return less than asked
        more = source.read(STDIN_IN_MEMORY + 1 - len(head))
        if not more:
            break
        head += more
    if len(head) <= STDIN_IN_MEMORY:
        return io.BytesIO(head)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; the caller closes it)
    try:
        spool.write(head)
        del head
        shutil.copyfileobj(source, spool, 1 << 20)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


#: A TIFF may be any of these (the extension does not tell), as --file-type names them.
TIFF_TYPES = "tiff_g3|tiff_g4|tiff_color"


def _document(path: str, file_type: int | None) -> Any:
    """The FaxFile of a path; a TIFF without --file-type is refused in the command's words
    (the library's message names its Python constants)."""
    from pathlib import Path

    from faxws.errors import BadInputError
    from faxws.models import FaxFile

    name = Path(path)
    ext = name.suffix.lower()
    if file_type is None and ext in (".tif", ".tiff"):
        raise BadInputError(
            "file_type",
            f"cannot infer the type of {name.name!r} from its extension {ext!r} (TIFF has "
            f"several types); pass --file-type {TIFF_TYPES}",
        )
    return FaxFile.from_path(path, file_type)


def job_options(args: argparse.Namespace) -> Any:
    """The JobOptions the flags give, or None (a plain SendFax) when none is given. The
    reference id is made here when not given, so that an interrupted send can name it."""
    from faxws._protocol.assumptions import new_reference_id
    from faxws.jobs import JobOptions, Notify

    if args.notify_url is None and args.notify_user is not None:
        raise UsageError("--notify-user needs --notify-url")
    texts = {name: getattr(args, name) for name in JOB_TEXT_OPTIONS}
    given = {name: value for name, value in texts.items() if value is not None}
    dates = {"start_at": args.start_at, "expires_at": args.expires_at}
    others = [args.reference, args.notify_url, *dates.values()]
    if not given and all(value is None for value in others):
        return None
    notify = None
    if args.notify_url is not None:
        from urllib.parse import urlsplit

        try:
            url = urlsplit(args.notify_url)
        except ValueError:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.hostname:
            raise UsageError("--notify-url must be an http:// or https:// URL")
        # The password only from the environment: a flag would show in process listings.
        password = os.environ.get(NOTIFY_PASSWORD_ENV, "")
        notify = Notify(args.notify_url, user=args.notify_user or "", password=password)
    return JobOptions(
        reference_id=new_reference_id() if args.reference is None else args.reference,
        notify=notify,
        **dates,
        **given,
    )


def run(args: argparse.Namespace, out: Outcome) -> int:
    out.faxing = True
    if args.wait_timeout is not None and not args.wait:
        raise UsageError("--wait-timeout needs --wait")
    client = None
    sent = None
    recipients: list[Any] = []

    def action(stack: ExitStack) -> _client.Answer:
        nonlocal client, sent
        from faxws.errors import BadInputError
        from faxws.models import FaxFile, Recipient, file_type_from_name

        if len(args.name) > len(args.to) or len(args.company) > len(args.to):
            raise UsageError("more --name or --company than --to")
        if args.files.count("-") > 1:
            raise UsageError("standard input (-) can be given only once")
        if "-" in args.files and args.file_type is None:
            raise UsageError("reading a document from standard input (-) needs --file-type")
        file_type = None if args.file_type is None else file_type_from_name(args.file_type)
        options = job_options(args)
        pad = [""] * len(args.to)
        paired = zip(args.to, args.name + pad, args.company + pad, strict=False)
        for i, (number, name, company) in enumerate(paired):
            try:
                recipients.append(Recipient(number, name=name, company=company))
            except BadInputError as exc:
                raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
        paths = [_document(p, file_type) if p != "-" else None for p in args.files]
        client = stack.enter_context(_client.make_client(args))
        files = []
        for path in paths:
            if path is None:  # standard input, read last: a usage error must not wait for it
                if sys.stdin is None:
                    raise UsageError("there is no standard input to read the document from")
                spooled = stack.enter_context(spool_stdin(sys.stdin.buffer))
                if spooled.seek(0, os.SEEK_END) == 0:
                    raise UsageError("FILE -: standard input is empty")
                spooled.seek(0)
                assert file_type is not None
                path = FaxFile(spooled, file_type)
            files.append(path)
        if options is not None:
            out.reference_id = options.reference_id
        _client.sending(out, client)
        result = sent = client.send_fax(
            recipients, files, request_id=out.request_id, options=options
        )
        width = max(len(r.fax_number) for r in recipients)
        lines = [f"Sent {len(files)} file(s) to {len(recipients)} recipient(s)."]
        for r, job in zip(recipients, result.job_ids, strict=False):
            lines.append(f"  {r.fax_number:<{width}}  job {job}")
        lines.append(f"TTFP:        {result.ttfp} s")
        if result.reference_id is not None:
            lines.append(f"Reference:   {result.reference_id}")
        names = [STDIN_NAME if p == "-" else f.name for p, f in zip(args.files, files, strict=True)]
        data = {
            "job_ids": list(result.job_ids),
            "recipients": [r.fax_number for r in recipients],
            "files": [
                {"name": n, "size": f.size, "file_type": f.file_type}
                for n, f in zip(names, files, strict=True)
            ],
            "ttfp": result.ttfp,
        }
        if result.reference_id is not None:
            data["reference_id"] = result.reference_id
        return result, data, lines

    def then(data: dict[str, Any]) -> int:
        from faxws.cli import _wait

        assert client is not None
        assert sent is not None
        timeout = _wait.DEFAULT_TIMEOUT if args.wait_timeout is None else args.wait_timeout
        numbers = [r.fax_number for r in recipients]
        return _wait.wait(client, out, sent, numbers, timeout, data)

    return _client.call(args, out, action, "the fax was sent", then if args.wait else None)
