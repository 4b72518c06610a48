"""``faxws send``: one or more documents to one or more fax numbers (SendFax)."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from typing import BinaryIO

from faxws.cli import _client
from faxws.cli._output import EXIT_CODES_HELP, Outcome, UsageError

SUMMARY = "send a fax (SendFax)"
DESCRIPTION = "Send one or more files to one or more fax numbers."
EXAMPLE = """\
example:
  export FAXWS_BASE_URL=https://fax.example.com FAXWS_USER_ID=mbx1234567890
  export FAXWS_TOKEN=...            # or FAXWS_PIN=..., or the FAXWS_CLIENT_* settings
  faxws send --to "+1 555 0100" --name Bob --to "+1 555 0101" contract.pdf
  scan-to-pdf | faxws send --to "+1 555 0100" - --file-type pdf
"""
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


def run(args: argparse.Namespace, out: Outcome) -> int:
    out.faxing = True

    def action(stack: ExitStack) -> _client.Answer:
        from faxws.errors import BadInputError
        from faxws.models import FaxFile, Recipient, file_type_from_name

        if len(args.name) > len(args.to) or len(args.company) > len(args.to):
            raise UsageError("more --name or --company than --to")
        if args.files.count("-") > 1:
            raise UsageError("standard input (-) can be given only once")
        if "-" in args.files and args.file_type is None:
            raise UsageError("reading a document from standard input (-) needs --file-type")
        file_type = None if args.file_type is None else file_type_from_name(args.file_type)
        recipients = []
        pad = [""] * len(args.to)
        paired = zip(args.to, args.name + pad, args.company + pad, strict=False)
        for i, (number, name, company) in enumerate(paired):
            try:
                recipients.append(Recipient(number, name=name, company=company))
            except BadInputError as exc:
                raise BadInputError(f"recipients[{i}].{exc.field}", exc.problem) from None
        paths = [FaxFile.from_path(p, file_type) if p != "-" else None for p in args.files]
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
        out.sending = True
        result = client.send_fax(recipients, files, request_id=out.request_id)
        width = max(len(r.fax_number) for r in recipients)
        lines = [f"Sent {len(files)} file(s) to {len(recipients)} recipient(s)."]
        for r, job in zip(recipients, result.job_ids, strict=False):
            lines.append(f"  {r.fax_number:<{width}}  job {job}")
        lines.append(f"TTFP:        {result.ttfp} s")
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
        return result, data, lines

    return _client.call(args, out, action, "the fax was sent")
